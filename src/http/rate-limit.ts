export interface RateLimitOptions {
  /** Attempts one key (a client address) may make per window. */
  perKey: number;
  /** Attempts all keys together may make per window. */
  total: number;
  /** @default 60_000 */
  windowMs?: number;
  /**
   * Distinct keys remembered per window; once reached, new keys are refused until the window
   * ends, so a flood of addresses (IPv6 gives anyone millions) cannot grow memory. @default 10_000
   */
  maxKeys?: number;
  /** @default Date.now */
  now?: () => number;
}

export type RateLimitVerdict = { ok: true } | { ok: false; retryAfterMs: number; reason: 'address' | 'total' };

export interface RateLimiter {
  /** Counts one attempt for `key`, or says how long until the next one may be made. Refused attempts are not counted. */
  take(key: string): RateLimitVerdict;
  /** Whether `key` may make one more attempt, without counting it (see `take`). */
  check(key: string): RateLimitVerdict;
}

/**
 * Fixed one-minute windows, per key and overall. Simple on purpose: it bounds brute force and the
 * work an unauthenticated client can cause; burstiness at a window's edge (twice the rate for a
 * moment) does not matter for that.
 */
export function createRateLimiter(options: RateLimitOptions): RateLimiter {
  const windowMs = options.windowMs ?? 60_000;
  const maxKeys = options.maxKeys ?? 10_000;
  const now = options.now ?? Date.now;
  let windowStart = -Infinity;
  let total = 0;
  const counts = new Map<string, number>();

  function check(key: string): RateLimitVerdict {
    const t = now();
    if (t >= windowStart + windowMs) {
      windowStart = t;
      total = 0;
      counts.clear();
    }
    const retryAfterMs = windowStart + windowMs - t;
    const count = counts.get(key) ?? 0;
    if (count >= options.perKey) return { ok: false, retryAfterMs, reason: 'address' };
    if (total >= options.total || (count === 0 && counts.size >= maxKeys)) return { ok: false, retryAfterMs, reason: 'total' };
    return { ok: true };
  }

  return {
    check,
    take(key) {
      const verdict = check(key);
      if (!verdict.ok) return verdict;
      counts.set(key, (counts.get(key) ?? 0) + 1);
      total += 1;
      return verdict;
    },
  };
}
