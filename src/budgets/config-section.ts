import { int, mapping, number, section } from '../config-schema/index.js';
import type { LimitsConfig } from './limits.js';

const minutes = (m: number) => Math.round(m * 60_000);

/**
 * `limits:` in baton.yaml: every run's token cap and duration limit, unless its stage sets its own
 * (`pipeline.stages.<name>.tokenCap`, `.maxDurationMinutes`).
 *
 * ```yaml
 * limits:
 *   tokenCap: 400000          # BATON_TOKEN_CAP
 *   maxDurationMinutes: 60    # RUN_MAX_DURATION_MINUTES
 * ```
 */
export const limitsSection = section(
  mapping({
    tokenCap: int({
      env: 'BATON_TOKEN_CAP',
      min: 0,
      default: 0,
      doc: 'tokens (input + output) an agent may use before its runner stops it and the run fails; 0 = no cap',
    }),
    maxDurationMinutes: number({
      env: 'RUN_MAX_DURATION_MINUTES',
      min: 0.01,
      doc: 'longest a run may take: the runner stops the agent, and baton ends the run timed_out soon after; default STALE_WORKSPACE_MINUTES',
    }),
  }),
  (v): LimitsConfig => ({
    tokenCap: v.tokenCap,
    ...(v.maxDurationMinutes !== undefined ? { maxDurationMs: minutes(v.maxDurationMinutes) } : {}),
  }),
);
