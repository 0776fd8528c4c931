import type { Run } from './types.js';

/**
 * Retries of agent runs. A run that ends `failed` is tried again when the failure is one that
 * passes, up to its stage's number of attempts, with backoff (`BACKOFF.agentRun`); any other
 * failure is final at once.
 *
 * The runner reports why a run failed as a machine-readable kind in the completion's `error`
 * (runner-contract/bodies.ts `FAILURE_KIND`); baton's own reconcile reports `workspace_lost`.
 * - transient: the agent API was overloaded (HTTP 529 or 5xx) or rate-limited (429), the agent
 *   could not reach it (network), the runner was stopped from outside, the workspace was lost;
 * - permanent: everything else, above all the agent reporting an error of its own, the token cap,
 *   a prompt file that cannot be used, a clone or setup that failed for a reason of its own (no
 *   such repository, no access, a bad branch, a failing build). Retrying those would fail the
 *   same way and spend the budget again.
 *
 * The clone and the setup steps failing for a reason that passes (`clone_unavailable`,
 * `setup_unavailable`: the forge answered 5xx or could not be reached, the disk was full, a
 * timeout) are retried too, but like a failed provisioning rather than a failed agent: the agent
 * never ran, so the wait is the queue's (`queue.backoffBaseSeconds` × 3 doubling to
 * `queue.backoffMaxSeconds`), not the agent API's minutes.
 */
export const SETUP_FAILURES = ['clone_unavailable', 'setup_unavailable'] as const;

export const TRANSIENT_FAILURES = [
  'agent_overloaded',
  'agent_rate_limited',
  'agent_unreachable',
  'runner_terminated',
  'workspace_lost',
  ...SETUP_FAILURES,
] as const;

export type TransientFailure = (typeof TRANSIENT_FAILURES)[number];

export function isTransientFailure(error: string | null | undefined): error is TransientFailure {
  return (TRANSIENT_FAILURES as readonly string[]).includes(error ?? '');
}

/** Whether the failure came before the agent started (the clone, a setup step): retried at the queue's pace. */
export function isSetupFailure(error: string | null | undefined): boolean {
  return (SETUP_FAILURES as readonly string[]).includes(error ?? '');
}

export interface RetryPolicy {
  /** Attempts of the agent (the first included) a run of `stage` may take. */
  attemptsFor(stage: string): number;
}

/**
 * Which attempt of its agent `run` is on within its turn (1 = the first). A conversation's reply
 * starts a new turn as the run's next agent attempt (runs/conversation.ts records where in
 * `payload.resume.attempt`), so the attempts a stage allows are counted per turn: the third
 * turn of a conversation gets its retries like the first.
 */
export function attemptInTurn(run: Pick<Run, 'agentAttempt' | 'payload'>): number {
  const resume = run.payload.resume as { attempt?: unknown } | undefined;
  const start = typeof resume?.attempt === 'number' && Number.isInteger(resume.attempt) && resume.attempt >= 1 ? resume.attempt : 1;
  return Math.max(1, run.agentAttempt - start + 1);
}
