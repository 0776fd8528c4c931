import type { AgentUsage } from './outcome.js';

/**
 * What a model's tokens cost, in USD per million tokens: for agents whose CLI reports no cost
 * (Codex CLI, Gemini CLI) baton prices their tokens itself, so budgets, the usage API and the
 * charts treat every agent alike; for those that report one (Claude Code, OpenCode) the price
 * checks the claim (`countCost`). Cached input is priced apart (it costs a tenth or a quarter of
 * fresh input). The defaults are the vendors' published list prices when this table was written;
 * `agents.prices` in baton.yaml replaces or adds models.
 */
export interface ModelPrice {
  /** Fresh (uncached) input. */
  input: number;
  /** Input read from the prompt cache. @default input */
  cachedInput?: number;
  output: number;
  /** Input written to the prompt cache (Anthropic's cache creation). @default input */
  cacheWrite?: number;
}

export type PriceTable = Readonly<Record<string, ModelPrice>>;

/**
 * List prices (USD per 1M tokens): OpenAI platform.openai.com/docs/pricing, Google
 * ai.google.dev/gemini-api/docs/pricing (≤ 200k-token prompts), Anthropic
 * docs.anthropic.com/en/docs/about-claude/pricing. `<agent>:default` prices a run whose model the
 * CLI chose itself (its default model).
 */
export const DEFAULT_PRICES: PriceTable = {
  'gpt-5': { input: 1.25, cachedInput: 0.125, output: 10 },
  'gpt-5-codex': { input: 1.25, cachedInput: 0.125, output: 10 },
  'gpt-5-mini': { input: 0.25, cachedInput: 0.025, output: 2 },
  'gpt-5-nano': { input: 0.05, cachedInput: 0.005, output: 0.4 },
  'gpt-4.1': { input: 2, cachedInput: 0.5, output: 8 },
  o3: { input: 2, cachedInput: 0.5, output: 8 },
  'o4-mini': { input: 1.1, cachedInput: 0.275, output: 4.4 },
  'gemini-2.5-pro': { input: 1.25, cachedInput: 0.31, output: 10 },
  'gemini-2.5-flash': { input: 0.3, cachedInput: 0.075, output: 2.5 },
  'gemini-2.5-flash-lite': { input: 0.1, cachedInput: 0.025, output: 0.4 },
  'claude-opus-4-1': { input: 15, cachedInput: 1.5, output: 75, cacheWrite: 18.75 },
  'claude-sonnet-4-5': { input: 3, cachedInput: 0.3, output: 15, cacheWrite: 3.75 },
  'claude-haiku-4-5': { input: 1, cachedInput: 0.1, output: 5, cacheWrite: 1.25 },
  'codex:default': { input: 1.25, cachedInput: 0.125, output: 10 },
  'gemini:default': { input: 1.25, cachedInput: 0.31, output: 10 },
};

/**
 * The price of `model` (exact, then without a `provider/` prefix, then the agent's default), or
 * null when the table has none: the run's cost then stays unknown rather than guessed.
 */
export function findPrice(table: PriceTable, agent: string, model: string | null | undefined): ModelPrice | null {
  const candidates = model ? [model, model.split('/').at(-1)!] : [];
  for (const name of [...candidates, `${agent}:default`]) {
    const price = table[name];
    if (price) return price;
  }
  return null;
}

/** USD for `usage` at `price`. */
export function priceUsage(usage: AgentUsage, price: ModelPrice): number {
  const perToken = (perMillion: number) => perMillion / 1_000_000;
  const cost =
    usage.inputTokens * perToken(price.input) +
    usage.cacheReadInputTokens * perToken(price.cachedInput ?? price.input) +
    usage.cacheCreationInputTokens * perToken(price.cacheWrite ?? price.input) +
    usage.outputTokens * perToken(price.output);
  // Cents of a cent are noise; keep the sum stable to the millionth of a dollar.
  return Math.round(cost * 1_000_000) / 1_000_000;
}

/**
 * How far a cost the CLI reports may stray from the price of the tokens it reports before baton
 * counts the price instead: more than `factor` times apart, and by more than `minUsd` (so the
 * rounding of a cheap run is no disagreement). Long-context and tiered rates stay within 2×.
 */
export const REPORTED_COST_TOLERANCE = { factor: 3, minUsd: 0.01 } as const;

/** The cost a run counts, where it came from, and why a reported one was refused. */
export interface CountedCost {
  costUsd: number | null;
  source: 'reported' | 'computed' | null;
  /** The reported cost's refusal, for the run's log; null when none was refused. */
  refused: string | null;
}

/**
 * The cost of an agent's turn. A CLI that reports none is priced from its tokens (when the table
 * has a price). A cost it reports is a claim like its tokens (budgets/claims.ts checked its form
 * as it was read): where the table prices the run's model, a reported cost more than
 * `REPORTED_COST_TOLERANCE` away from the price of the tokens the same CLI reported is refused
 * and the price counts instead (an OpenCode that knows no price for a model reports $0, which
 * would leave budgets blind). Without a price the reported cost stands.
 */
export function countCost(usage: AgentUsage | null, reported: number | null, price: ModelPrice | null | undefined): CountedCost {
  const computed = usage && price ? priceUsage(usage, price) : null;
  if (reported === null) return { costUsd: computed, source: computed === null ? null : 'computed', refused: null };
  if (computed === null) return { costUsd: reported, source: 'reported', refused: null };
  const { factor, minUsd } = REPORTED_COST_TOLERANCE;
  const apart = Math.abs(reported - computed) > minUsd && (reported * factor < computed || reported > computed * factor);
  if (!apart) return { costUsd: reported, source: 'reported', refused: null };
  return {
    costUsd: computed,
    source: 'computed',
    refused:
      `[baton] refused the reported cost $${reported.toFixed(4)}: the price table prices the tokens the agent reported at ` +
      `$${computed.toFixed(4)}, more than ${factor} times apart; the computed cost counts`,
  };
}
