import type { Kysely } from 'kysely';
import type { Database } from '../store/index.js';
import { withOutboxTable } from './table.js';
import { OUTBOX_STATUS, type NewOutboxEntry } from './types.js';

export const DEFAULT_MAX_ATTEMPTS = 20;

/**
 * Inserts an entry inside the caller's transaction, so it commits or rolls back with the change
 * that caused it. Returns the new id, or null when `dedupKey` was already used.
 */
export async function enqueueOutbox(
  trx: Kysely<Database>,
  entry: NewOutboxEntry,
  options: { now?: number; maxAttempts?: number } = {},
): Promise<number | null> {
  const now = options.now ?? Date.now();
  const payload = JSON.stringify(entry.payload ?? null);
  const row = await withOutboxTable(trx)
    .insertInto('outbox')
    .values({
      kind: entry.kind,
      ordering_key: entry.orderingKey ?? null,
      dedup_key: entry.dedupKey ?? null,
      run_id: entry.runId ?? null,
      payload,
      status: OUTBOX_STATUS.pending,
      attempts: 0,
      max_attempts: entry.maxAttempts ?? options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
      next_attempt_at: now + Math.max(0, entry.delayMs ?? 0),
      created_at: now,
      updated_at: now,
    })
    // ON CONFLICT, not read-then-write: two transactions inserting the same key cannot both win.
    .onConflict((oc) => oc.column('dedup_key').doNothing())
    .returning('id')
    .executeTakeFirst();
  return row?.id ?? null;
}
