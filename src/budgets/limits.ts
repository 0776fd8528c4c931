/**
 * Per-run limits: the most tokens an agent may use and the longest a run may take. Global values
 * come from `limits:` in baton.yaml, a stage's own from its row in `pipeline.stages`; the stage
 * wins. The same resolved numbers go to every workspace provider (the runner enforces them) and
 * onto the run (baton enforces the duration itself too, in case the runner never reports).
 */
export interface LimitsConfig {
  /** Tokens (input + output) an agent may use before the runner stops it; 0 = no cap. */
  tokenCap: number;
  /** Longest a run may take; absent = `STALE_WORKSPACE_MINUTES`. */
  maxDurationMs?: number;
  /** Attempts of the agent per run when it fails transiently (runs/retries.ts); 1 = no retries. @default 3 */
  agentAttempts?: number;
  /** How long a run whose agent asked a question waits for a reply before it ends `expired`. @default 72 h */
  replyWaitMs?: number;
}

/** A stage's own limits (`pipeline.stages.<name>.tokenCap`, `.maxDurationMinutes`). */
export interface StageLimits {
  tokenCap?: number;
  maxDurationMs?: number;
}

export interface RunLimits {
  /** Absent: no cap (the runner's default). */
  tokenCap?: number;
  maxDurationMs: number;
}

/**
 * How long after a run's own limit baton ends it `timed_out` itself. The runner stops the agent at
 * the limit (its clock starts before baton sees the workspace running), waits its kill grace
 * (10 s) and calls back with retries; its report says more than baton's, so it gets to come first.
 */
export const DURATION_GRACE_MS = 2 * 60_000;

/** The limits of one run of `stage`; `fallbackDurationMs` is `STALE_WORKSPACE_MINUTES`. */
export function runLimits(global: LimitsConfig, stage: StageLimits | undefined, fallbackDurationMs: number): RunLimits {
  const tokenCap = stage?.tokenCap ?? global.tokenCap;
  return {
    ...(tokenCap > 0 ? { tokenCap } : {}),
    maxDurationMs: stage?.maxDurationMs ?? global.maxDurationMs ?? fallbackDurationMs,
  };
}
