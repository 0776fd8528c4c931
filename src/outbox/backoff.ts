export interface BackoffOptions {
  /** @default 5_000 */
  baseMs: number;
  /** @default 600_000 (10 minutes) */
  maxMs: number;
}

/**
 * Delay before retry number `attempt` (1 = after the first failure): doubling from `baseMs`,
 * capped at `maxMs`, with "equal jitter" (half fixed, half random) so a Gitea outage does not
 * end with every replica retrying in the same instant.
 */
export function backoffDelay(attempt: number, options: BackoffOptions, random: () => number = Math.random): number {
  const exponential = Math.min(options.maxMs, options.baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(exponential / 2 + random() * (exponential / 2));
}
