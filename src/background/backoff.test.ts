import { describe, expect, it } from 'vitest';
import { BACKOFF, backoffDelay } from './backoff.js';

describe('backoffDelay', () => {
  const policy = { baseMs: 5_000, maxMs: 600_000 };

  it('doubles per attempt between half and all of the exponential delay', () => {
    expect(backoffDelay(policy, 1, () => 0)).toBe(2_500);
    expect(backoffDelay(policy, 1, () => 1)).toBe(5_000);
    expect(backoffDelay(policy, 3, () => 1)).toBe(20_000);
    expect(backoffDelay(policy, 3, () => 0)).toBe(10_000);
  });

  it('never exceeds the maximum, however many attempts', () => {
    expect(backoffDelay(policy, 40, () => 1)).toBe(600_000);
    expect(backoffDelay(policy, 40, () => 0)).toBe(300_000);
    expect(backoffDelay(policy, 10_000, () => 1)).toBe(600_000);
  });

  it('treats attempt 0 or below as the first', () => {
    expect(backoffDelay(policy, 0, () => 1)).toBe(5_000);
    expect(backoffDelay(policy, -3, () => 1)).toBe(5_000);
  });

  it('is never immediate: every named policy waits at least half its base', () => {
    for (const [name, preset] of Object.entries(BACKOFF)) {
      expect(
        backoffDelay(preset, 1, () => 0),
        name,
      ).toBe(preset.baseMs / 2);
      expect(preset.maxMs, name).toBeGreaterThanOrEqual(preset.baseMs);
    }
  });
});
