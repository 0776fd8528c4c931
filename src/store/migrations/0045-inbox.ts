import type { Migration } from './types.js';

/**
 * The durable inbox: every verified delivery is one row, stored before the forge is
 * answered and processed afterwards by the inbox worker. `subject` (`owner/repo#n`, lower-cased)
 * orders processing: a row is taken only when no earlier row of its subject is unprocessed, because
 * label memory depends on order. `body_sha256` is the hash of the signed JSON payload: a manual
 * redelivery (new delivery id) or the same body to another endpoint is found by it.
 * Statuses: pending (due at `next_attempt_at`) → processing (leased) → processed (with `outcome`
 * and `verdict`); an expired lease makes a processing row takeable again.
 */
const columns = (id: string, big: string, text: string) => `(
      id ${id},
      source TEXT NOT NULL,
      endpoint TEXT NOT NULL,
      delivery_id TEXT,
      event TEXT,
      event_type TEXT,
      headers TEXT NOT NULL,
      body ${text} NOT NULL,
      body_sha256 TEXT NOT NULL,
      repository TEXT,
      number INTEGER,
      subject TEXT NOT NULL,
      received_at ${big} NOT NULL,
      status TEXT NOT NULL,
      attempts INTEGER NOT NULL DEFAULT 0,
      next_attempt_at ${big} NOT NULL,
      lease_token TEXT,
      lease_expires_at ${big},
      last_error TEXT,
      outcome TEXT,
      verdict TEXT,
      run_ids TEXT,
      stages TEXT,
      labels_before TEXT,
      processed_at ${big}
    )`;

const indexes = [
  // The worker's question: what is due, oldest first.
  `CREATE INDEX inbox_deliveries_open ON inbox_deliveries (next_attempt_at, id) WHERE status <> 'processed'`,
  // "Is an earlier row of this subject unprocessed?"
  `CREATE INDEX inbox_deliveries_subject ON inbox_deliveries (subject, id) WHERE status <> 'processed'`,
  `CREATE INDEX inbox_deliveries_hash ON inbox_deliveries (body_sha256, id)`,
  `CREATE INDEX inbox_deliveries_delivery ON inbox_deliveries (delivery_id, id) WHERE delivery_id IS NOT NULL`,
  `CREATE INDEX inbox_deliveries_received ON inbox_deliveries (received_at)`,
];

export const inbox: Migration = {
  name: '0045-inbox',
  sqlite: [`CREATE TABLE inbox_deliveries ${columns('INTEGER PRIMARY KEY AUTOINCREMENT', 'INTEGER', 'TEXT')}`, ...indexes],
  postgres: [`CREATE TABLE inbox_deliveries ${columns('BIGSERIAL PRIMARY KEY', 'BIGINT', 'TEXT')}`, ...indexes],
};
