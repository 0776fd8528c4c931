import type { Migration } from './types.js';

/**
 * The limits a run was started with (token cap, duration limit), recorded when it is claimed: the
 * API shows them, and the duration sweep ends a running run `timed_out` once its own limit (plus a
 * grace) has passed. Null on runs from before, and on queued runs: they fall back to
 * STALE_WORKSPACE_MINUTES.
 */
export const runLimits: Migration = {
  name: '0065-run-limits',
  sqlite: [`ALTER TABLE runs ADD COLUMN token_cap INTEGER`, `ALTER TABLE runs ADD COLUMN max_duration_ms INTEGER`],
  postgres: [`ALTER TABLE runs ADD COLUMN token_cap BIGINT`, `ALTER TABLE runs ADD COLUMN max_duration_ms BIGINT`],
};
