import type { Kysely } from 'kysely';
import type { Database } from '../store/index.js';

/** Row of `outbox` (migration 0015), as stored. */
export interface OutboxTable {
  id: import('kysely').Generated<number>;
  kind: string;
  ordering_key: string | null;
  dedup_key: string | null;
  run_id: number | null;
  payload: string;
  status: string;
  attempts: number;
  max_attempts: number;
  next_attempt_at: number;
  lease_token: string | null;
  lease_expires_at: number | null;
  last_error: string | null;
  result: string | null;
  created_at: number;
  updated_at: number;
  delivered_at: number | null;
}

export type OutboxDatabase = Database & { outbox: OutboxTable };

/**
 * The store's handle, typed to include the outbox table. The table type lives here, next to its
 * only user, so the shared schema file stays untouched.
 */
export function withOutboxTable(db: Kysely<Database>): Kysely<OutboxDatabase> {
  return db.withTables<{ outbox: OutboxTable }>();
}
