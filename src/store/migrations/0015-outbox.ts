import type { Migration } from './types.js';

/**
 * The outbox: side effects (forge comments now, outbound event webhooks later) written in the
 * same transaction as the state change that causes them, delivered afterwards with retries.
 *
 * - `kind` picks the delivery handler (`comment`, `webhook`, …).
 * - `ordering_key`: rows sharing a key are delivered one at a time in id order; a row waits
 *   while an older row of its key is still `pending` (comments use the issue, webhooks the run).
 *   NULL means no ordering.
 * - `dedup_key`: a second insert with the same key is ignored (NULLs never collide).
 * - `status`: `pending` (due at `next_attempt_at`; in flight while `lease_expires_at` is in the
 *   future) → `delivered` | `failed` (attempts exhausted or a permanent error; kept for inspection).
 */
export const outbox: Migration = {
  name: '0015-outbox',
  sqlite: [
    `CREATE TABLE outbox (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      kind TEXT NOT NULL,
      ordering_key TEXT,
      dedup_key TEXT,
      run_id INTEGER,
      payload TEXT NOT NULL,
      status TEXT NOT NULL,
      attempts INTEGER NOT NULL DEFAULT 0,
      max_attempts INTEGER NOT NULL,
      next_attempt_at INTEGER NOT NULL,
      lease_token TEXT,
      lease_expires_at INTEGER,
      last_error TEXT,
      result TEXT,
      created_at INTEGER NOT NULL,
      updated_at INTEGER NOT NULL,
      delivered_at INTEGER
    )`,
    `CREATE UNIQUE INDEX outbox_dedup ON outbox (dedup_key)`,
    `CREATE INDEX outbox_due ON outbox (next_attempt_at, id) WHERE status = 'pending'`,
    `CREATE INDEX outbox_order ON outbox (ordering_key, id) WHERE status = 'pending'`,
    `CREATE INDEX outbox_run ON outbox (run_id, id)`,
    `CREATE INDEX outbox_status ON outbox (status, id)`,
  ],
  postgres: [
    `CREATE TABLE outbox (
      id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      kind TEXT NOT NULL,
      ordering_key TEXT,
      dedup_key TEXT,
      run_id BIGINT,
      payload TEXT NOT NULL,
      status TEXT NOT NULL,
      attempts INTEGER NOT NULL DEFAULT 0,
      max_attempts INTEGER NOT NULL,
      next_attempt_at BIGINT NOT NULL,
      lease_token TEXT,
      lease_expires_at BIGINT,
      last_error TEXT,
      result TEXT,
      created_at BIGINT NOT NULL,
      updated_at BIGINT NOT NULL,
      delivered_at BIGINT
    )`,
    `CREATE UNIQUE INDEX outbox_dedup ON outbox (dedup_key)`,
    `CREATE INDEX outbox_due ON outbox (next_attempt_at, id) WHERE status = 'pending'`,
    `CREATE INDEX outbox_order ON outbox (ordering_key, id) WHERE status = 'pending'`,
    `CREATE INDEX outbox_run ON outbox (run_id, id)`,
    `CREATE INDEX outbox_status ON outbox (status, id)`,
  ],
};
