import { describe, expect, it } from 'vitest';
import { createRateLimiter } from './rate-limit.js';

describe('login rate limiter', () => {
  it('refuses an address past its share, then everyone past the total, until the window ends', () => {
    let t = 1_000;
    const limiter = createRateLimiter({ perKey: 2, total: 3, now: () => t });
    expect(limiter.take('a')).toEqual({ ok: true });
    expect(limiter.take('a')).toEqual({ ok: true });
    t += 15_000;
    expect(limiter.take('a')).toEqual({ ok: false, retryAfterMs: 45_000, reason: 'address' });
    expect(limiter.take('b')).toEqual({ ok: true });
    expect(limiter.take('c')).toEqual({ ok: false, retryAfterMs: 45_000, reason: 'total' });
    t += 45_000;
    expect(limiter.take('a')).toEqual({ ok: true });
    expect(limiter.take('c')).toEqual({ ok: true });
  });

  it('does not count refused attempts, so hammering does not extend the wait', () => {
    let t = 0;
    const limiter = createRateLimiter({ perKey: 1, total: 100, now: () => t });
    expect(limiter.take('a').ok).toBe(true);
    for (let i = 0; i < 50; i++) expect(limiter.take('a').ok).toBe(false);
    t = 60_000;
    expect(limiter.take('a').ok).toBe(true);
  });

  it('remembers a bounded number of addresses: new ones wait once the table is full', () => {
    const limiter = createRateLimiter({ perKey: 5, total: 1_000, maxKeys: 3, now: () => 0 });
    for (const key of ['a', 'b', 'c']) expect(limiter.take(key).ok).toBe(true);
    expect(limiter.take('d')).toMatchObject({ ok: false, reason: 'total' });
    expect(limiter.take('a').ok).toBe(true);
  });
});
