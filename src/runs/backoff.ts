/**
 * Exponential backoff with full jitter: attempt 1 waits up to `base`, attempt 2 up to `2 × base`,
 * … capped at `max`. Jitter spreads retries of runs that failed together (a provider outage).
 * The result lies in [delay / 2, delay] so a retry is never immediate.
 */
export function backoffDelay(attempt: number, baseMs: number, maxMs: number, random: () => number = Math.random): number {
  const delay = Math.min(maxMs, baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(delay / 2 + (random() * delay) / 2);
}
