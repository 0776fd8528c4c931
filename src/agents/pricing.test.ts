import { describe, expect, it } from 'vitest';
import { countCost, DEFAULT_PRICES, findPrice, priceUsage } from './index.js';

describe('price table', () => {
  it('prices cached input apart, and cache writes at their own price', () => {
    const usage = { inputTokens: 1_000_000, outputTokens: 100_000, cacheReadInputTokens: 2_000_000, cacheCreationInputTokens: 0 };
    // 1M fresh at 1.25 + 2M cached at 0.125 + 0.1M output at 10
    expect(priceUsage(usage, DEFAULT_PRICES['gpt-5-codex']!)).toBeCloseTo(1.25 + 0.25 + 1, 6);
    expect(priceUsage({ ...usage, cacheCreationInputTokens: 1_000_000 }, DEFAULT_PRICES['claude-sonnet-4-5']!)).toBeCloseTo(
      3 + 0.6 + 1.5 + 3.75,
      6,
    );
  });
  it('finds a model by name, without its provider, else the agent default, else none', () => {
    const table = { ...DEFAULT_PRICES, custom: { input: 1, output: 2 } };
    expect(findPrice(table, 'opencode', 'openai/custom')).toEqual({ input: 1, output: 2 });
    expect(findPrice(table, 'codex', null)).toBe(DEFAULT_PRICES['codex:default']);
    expect(findPrice(table, 'opencode', 'nobody/unknown')).toBeNull();
  });
});

describe('countCost: a reported cost is a claim, checked against the price of its tokens', () => {
  const usage = { inputTokens: 100_000, outputTokens: 10_000, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };
  const sonnet = DEFAULT_PRICES['claude-sonnet-4-5']!;
  // 100k in at 3 + 10k out at 15 per million: $0.45.
  it('prices tokens when the CLI reports no cost, and leaves the cost unknown without a price', () => {
    expect(countCost(usage, null, sonnet)).toEqual({ costUsd: 0.45, source: 'computed', refused: null });
    expect(countCost(usage, null, null)).toEqual({ costUsd: null, source: null, refused: null });
    expect(countCost(null, null, sonnet)).toEqual({ costUsd: null, source: null, refused: null });
  });
  it('keeps a reported cost within three times the price, or with no price to compare', () => {
    // Long-context rates double the price: still the CLI's own figure.
    expect(countCost(usage, 0.9, sonnet)).toEqual({ costUsd: 0.9, source: 'reported', refused: null });
    expect(countCost(usage, 0.2, sonnet)).toEqual({ costUsd: 0.2, source: 'reported', refused: null });
    expect(countCost(usage, 0, null)).toEqual({ costUsd: 0, source: 'reported', refused: null });
    // Tiny amounts never disagree: a cent apart at most.
    const small = { ...usage, inputTokens: 1_000, outputTokens: 0 };
    expect(countCost(small, 0, sonnet)).toEqual({ costUsd: 0, source: 'reported', refused: null });
  });
  it('refuses one far below or far above, counting the computed cost, with a line for the log', () => {
    const zero = countCost(usage, 0, sonnet);
    expect(zero).toMatchObject({ costUsd: 0.45, source: 'computed' });
    expect(zero.refused).toBe(
      '[baton] refused the reported cost $0.0000: the price table prices the tokens the agent reported at $0.4500, more than 3 times apart; the computed cost counts',
    );
    expect(countCost(usage, 2, sonnet)).toMatchObject({ costUsd: 0.45, source: 'computed', refused: expect.stringContaining('$2.0000') });
  });
  it('counts a model priced at 0 as free (a flat-fee provider)', () => {
    expect(countCost(usage, 0, { input: 0, output: 0 })).toEqual({ costUsd: 0, source: 'reported', refused: null });
  });
});
