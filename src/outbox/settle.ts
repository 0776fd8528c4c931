import type { Store } from '../store/index.js';
import { withOutboxTable } from './table.js';
import { OUTBOX_STATUS } from './types.js';

/** Each returns false when the lease was lost (another worker re-claimed the entry). */
export async function markDelivered(store: Store, id: number, leaseToken: string, result: unknown, now: number): Promise<boolean> {
  const res = await withOutboxTable(store.db)
    .updateTable('outbox')
    .set({
      status: OUTBOX_STATUS.delivered,
      result: result === undefined ? null : JSON.stringify(result),
      lease_token: null,
      lease_expires_at: null,
      last_error: null,
      delivered_at: now,
      updated_at: now,
    })
    .where('id', '=', id)
    .where('lease_token', '=', leaseToken)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

export async function markRetry(
  store: Store,
  id: number,
  leaseToken: string,
  error: string,
  nextAttemptAt: number,
  now: number,
): Promise<boolean> {
  const res = await withOutboxTable(store.db)
    .updateTable('outbox')
    .set({ lease_token: null, lease_expires_at: null, last_error: error, next_attempt_at: nextAttemptAt, updated_at: now })
    .where('id', '=', id)
    .where('lease_token', '=', leaseToken)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

export async function markFailed(store: Store, id: number, leaseToken: string, error: string, now: number): Promise<boolean> {
  const res = await withOutboxTable(store.db)
    .updateTable('outbox')
    .set({ status: OUTBOX_STATUS.failed, lease_token: null, lease_expires_at: null, last_error: error, updated_at: now })
    .where('id', '=', id)
    .where('lease_token', '=', leaseToken)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}
