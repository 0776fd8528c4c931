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
 *   a prompt file that cannot be used, a clone or setup that failed. Retrying those would fail
 *   the same way and spend the budget again.
 */
export const TRANSIENT_FAILURES = [
  'agent_overloaded',
  'agent_rate_limited',
  'agent_unreachable',
  'runner_terminated',
  'workspace_lost',
] as const;

export type TransientFailure = (typeof TRANSIENT_FAILURES)[number];

export function isTransientFailure(error: string | null | undefined): error is TransientFailure {
  return (TRANSIENT_FAILURES as readonly string[]).includes(error ?? '');
}

export interface RetryPolicy {
  /** Attempts of the agent (the first included) a run of `stage` may take. */
  attemptsFor(stage: string): number;
}
