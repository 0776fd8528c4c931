/**
 * How long to wait before retry number `attempt` (1 = after the first failure): doubling from
 * `baseMs`, capped at `maxMs`, with "equal jitter" (half fixed, half random). The fixed half keeps
 * a retry from being immediate; the random half spreads out the retries of everything that failed
 * together (a database or forge outage) so they do not all land in the same instant.
 */
export interface BackoffPolicy {
  /** The wait after the first failure (before jitter). */
  baseMs: number;
  /** The longest wait, however many failures. */
  maxMs: number;
}

/**
 * The fixed policies. Policies that come from configuration (provisioning retries, outbox and
 * teardown retries) are built from their settings and go through the same `backoffDelay`.
 */
export const BACKOFF = {
  /** A background loop whose pass failed (the database did not answer): 500 ms doubling to 30 s. */
  loop: { baseMs: 500, maxMs: 30_000 },
  /** Start-up waiting for the database: 1 s doubling to 30 s. */
  startup: { baseMs: 1_000, maxMs: 30_000 },
  /** Re-opening a dropped PostgreSQL LISTEN connection: 250 ms doubling to 10 s. */
  listen: { baseMs: 250, maxMs: 10_000 },
  /** An operator's `baton logs --follow` reconnecting to the event stream: 500 ms doubling to 5 s. */
  follow: { baseMs: 500, maxMs: 5_000 },
  /**
   * An agent run that failed for a reason that passes (the API overloaded or rate-limited, the
   * network, the workspace lost): 1 min doubling to 15 min. Rate limits reset within a minute or
   * so; a real outage needs longer, and a run retried too eagerly only burns an attempt.
   */
  agentRun: { baseMs: 60_000, maxMs: 15 * 60_000 },
} as const satisfies Record<string, BackoffPolicy>;

export function backoffDelay(policy: BackoffPolicy, attempt: number, random: () => number = Math.random): number {
  // The exponent is capped so a long outage cannot overflow to Infinity before the cap applies.
  const exponential = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.min(Math.max(0, attempt - 1), 40));
  return Math.round(exponential / 2 + random() * (exponential / 2));
}
