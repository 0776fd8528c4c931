import { describe, expect, it } from 'vitest';
import { DEFAULT_PRICES, findPrice, priceUsage } from './index.js';

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
