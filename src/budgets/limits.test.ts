import { describe, expect, it } from 'vitest';
import { runLimits } from './limits.js';

describe('runLimits', () => {
  const fallback = 120 * 60_000;

  it('takes the global limits when the stage has none', () => {
    expect(runLimits({ tokenCap: 50_000, maxDurationMs: 30 * 60_000 }, undefined, fallback)).toEqual({
      tokenCap: 50_000,
      maxDurationMs: 30 * 60_000,
    });
  });

  it('lets a stage override each limit on its own', () => {
    const global = { tokenCap: 50_000, maxDurationMs: 30 * 60_000 };
    expect(runLimits(global, { tokenCap: 200_000 }, fallback)).toEqual({ tokenCap: 200_000, maxDurationMs: 30 * 60_000 });
    expect(runLimits(global, { maxDurationMs: 5 * 60_000 }, fallback)).toEqual({ tokenCap: 50_000, maxDurationMs: 5 * 60_000 });
  });

  it('sends no cap for 0, globally or for a stage that lifts the global one', () => {
    expect(runLimits({ tokenCap: 0 }, undefined, fallback)).toEqual({ maxDurationMs: fallback });
    expect(runLimits({ tokenCap: 50_000 }, { tokenCap: 0 }, fallback)).toEqual({ maxDurationMs: fallback });
  });

  it('falls back to STALE_WORKSPACE_MINUTES for the duration', () => {
    expect(runLimits({ tokenCap: 0 }, {}, fallback).maxDurationMs).toBe(fallback);
  });
});
