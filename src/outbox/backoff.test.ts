import { describe, expect, it } from 'vitest';
import { backoffDelay } from './backoff.js';

describe('backoffDelay', () => {
  const options = { baseMs: 5_000, maxMs: 600_000 };

  it('doubles per attempt between half and all of the exponential delay', () => {
    expect(backoffDelay(1, options, () => 0)).toBe(2_500);
    expect(backoffDelay(1, options, () => 1)).toBe(5_000);
    expect(backoffDelay(3, options, () => 1)).toBe(20_000);
    expect(backoffDelay(3, options, () => 0)).toBe(10_000);
  });

  it('never exceeds the maximum', () => {
    expect(backoffDelay(40, options, () => 1)).toBe(600_000);
    expect(backoffDelay(40, options, () => 0)).toBe(300_000);
  });
});
