import type { Kysely } from 'kysely';
import type { Database, PreparedStatement, Store } from '../store/index.js';
import { OUTBOX_STATUS, type NewOutboxEntry } from './types.js';

export const DEFAULT_MAX_ATTEMPTS = 20;

/**
 * The insert of an entry, prepared (`Store.prepare`): it is written in the transactions of run
 * transitions (status comments), so it is parsed and planned once per connection, not at every
 * transition. ON CONFLICT, not read-then-write: two transactions inserting the same key cannot both win.
 */
const INSERT = `INSERT INTO outbox (kind, ordering_key, dedup_key, run_id, payload, status, attempts, max_attempts, next_attempt_at, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, '${OUTBOX_STATUS.pending}', 0, ?, ?, ?, ?)
ON CONFLICT (dedup_key) DO NOTHING
RETURNING id`;

export type OutboxInsert = PreparedStatement<{ id: number }>;

export function prepareOutboxInsert(store: Pick<Store, 'prepare'>): OutboxInsert {
  return store.prepare(INSERT);
}

/**
 * Inserts an entry inside the caller's transaction, so it commits or rolls back with the change
 * that caused it. Returns the new id, or null when `dedupKey` was already used.
 */
export async function enqueueOutbox(
  trx: Kysely<Database>,
  insert: OutboxInsert,
  entry: NewOutboxEntry,
  options: { now?: number; maxAttempts?: number } = {},
): Promise<number | null> {
  const now = options.now ?? Date.now();
  const [row] = await insert.execute(trx, [
    entry.kind,
    entry.orderingKey ?? null,
    entry.dedupKey ?? null,
    entry.runId ?? null,
    JSON.stringify(entry.payload ?? null),
    entry.maxAttempts ?? options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
    now + Math.max(0, entry.delayMs ?? 0),
    now,
    now,
  ]);
  return row?.id ?? null;
}
