import type { Migration } from './types.js';

/**
 * The callback tokens a live run was given by its earlier attempts. A run re-claimed after a crash
 * adopts the workspace its earlier attempt started (by name), and that workspace's runner holds
 * the earlier token: it must still be accepted, or the run's result is refused and lost. Rows go
 * when the run is retried by an operator or pruned.
 */
export const callbackTokenHistory: Migration = {
  name: '0060-callback-token-history',
  sqlite: [
    `CREATE TABLE callback_token_history (
      run_id INTEGER NOT NULL,
      token_hash TEXT NOT NULL,
      replaced_at INTEGER NOT NULL,
      PRIMARY KEY (run_id, token_hash)
    )`,
  ],
  postgres: [
    `CREATE TABLE callback_token_history (
      run_id BIGINT NOT NULL,
      token_hash TEXT NOT NULL,
      replaced_at BIGINT NOT NULL,
      PRIMARY KEY (run_id, token_hash)
    )`,
  ],
};
