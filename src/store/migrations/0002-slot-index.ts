import type { Migration } from './types.js';

/**
 * Every claim counts the runs holding a slot (globally and per repository). With a backlog of
 * thousands of queued runs, a small partial index over just the live-workspace rows keeps that
 * count independent of the queue's length.
 */
export const slotIndex: Migration = {
  name: '0002-slot-index',
  sqlite: [`CREATE INDEX runs_slots ON runs (owner, repo) WHERE status IN ('provisioning', 'running')`],
  postgres: [`CREATE INDEX runs_slots ON runs (owner, repo) WHERE status IN ('provisioning', 'running')`],
};
