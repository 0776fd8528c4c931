import type { Migration } from './types.js';

const LIVE = `status IN ('queued', 'provisioning', 'running', 'held')`;

/**
 * Daily budgets (budgets/):
 * - `held` runs keep their dedup key, so the unique index on live keys now covers them too. A
 *   replica still on the old code names the old predicate in its `ON CONFLICT`; PostgreSQL still
 *   infers this index from it, since the old list implies the new one.
 * - `runs.held_reason`: why a held run waits (the scope whose budget is spent), cleared on release.
 * - `budget_usage`: tokens and cost the agents reported, per day (in the budgets' time zone) and
 *   scope (`global`, `repository:OWNER/REPO`, `stage:NAME`), added to in the same transaction as
 *   the run's completion, so it is right across restarts and replicas and survives run pruning.
 * - `budget_limits`: today's limits an operator set through the API (null: the configured one).
 */
export const budgets: Migration = {
  name: '0066-budgets',
  sqlite: [
    `DROP INDEX runs_live_key`,
    `CREATE UNIQUE INDEX runs_live_key ON runs (key) WHERE ${LIVE}`,
    `CREATE INDEX runs_held ON runs (run_at, id) WHERE status = 'held'`,
    `ALTER TABLE runs ADD COLUMN held_reason TEXT`,
    `CREATE TABLE budget_usage (
      day TEXT NOT NULL,
      scope TEXT NOT NULL,
      tokens INTEGER NOT NULL,
      cost_usd REAL NOT NULL,
      runs INTEGER NOT NULL,
      updated_at INTEGER NOT NULL,
      PRIMARY KEY (day, scope)
    )`,
    `CREATE TABLE budget_limits (
      day TEXT NOT NULL,
      scope TEXT NOT NULL,
      tokens INTEGER,
      cost_usd REAL,
      updated_at INTEGER NOT NULL,
      PRIMARY KEY (day, scope)
    )`,
  ],
  postgres: [
    `DROP INDEX runs_live_key`,
    `CREATE UNIQUE INDEX runs_live_key ON runs (key) WHERE ${LIVE}`,
    `CREATE INDEX runs_held ON runs (run_at, id) WHERE status = 'held'`,
    `ALTER TABLE runs ADD COLUMN held_reason TEXT`,
    `CREATE TABLE budget_usage (
      day TEXT NOT NULL,
      scope TEXT NOT NULL,
      tokens BIGINT NOT NULL,
      cost_usd DOUBLE PRECISION NOT NULL,
      runs INTEGER NOT NULL,
      updated_at BIGINT NOT NULL,
      PRIMARY KEY (day, scope)
    )`,
    `CREATE TABLE budget_limits (
      day TEXT NOT NULL,
      scope TEXT NOT NULL,
      tokens BIGINT,
      cost_usd DOUBLE PRECISION,
      updated_at BIGINT NOT NULL,
      PRIMARY KEY (day, scope)
    )`,
  ],
};
