import type { Migration } from './types.js';

/**
 * `runs.cost_source`: whether a run's `cost_usd` was reported by its agent's CLI (Claude Code,
 * OpenCode) or computed by baton from its tokens and the price table (Codex CLI, Gemini CLI
 * report none). Null for runs without a cost, and for runs finished before this column existed.
 */
export const costSource: Migration = {
  name: '0105-cost-source',
  sqlite: [`ALTER TABLE runs ADD COLUMN cost_source TEXT`],
  postgres: [`ALTER TABLE runs ADD COLUMN IF NOT EXISTS cost_source TEXT`],
};
