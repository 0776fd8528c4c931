import type { Store } from '../store/index.js';
import { forgeFacts } from './facts.js';
import { DELIVERY_STATUS } from './inbox/index.js';
import { WEBHOOK_DEFAULTS } from './webhooks-config.js';

/**
 * Deletes inbox deliveries (the inspector's history and the duplicate check's memory) processed
 * longer ago than the retention (`webhooks.deliveryRetentionDays`, default 7). Unprocessed ones
 * are never deleted, however old: they are events still owed an effect. Counted from the verdict,
 * not from receipt, so a delivery that waited out a long forge outage is still there to inspect
 * after it finally ran. The forge facts acted on (facts.ts) are kept as long. Returns how many
 * deliveries were deleted.
 */
export async function pruneProcessedDeliveries(
  store: Pick<Store, 'db'>,
  retentionDays: number = WEBHOOK_DEFAULTS.deliveryRetentionDays,
  now: () => number = Date.now,
): Promise<number> {
  const before = now() - retentionDays * 24 * 60 * 60 * 1000;
  const result = await store.db
    .deleteFrom('inbox_deliveries')
    .where('status', '=', DELIVERY_STATUS.processed)
    .where('processed_at', '<', before)
    .executeTakeFirst();
  await forgeFacts.prune(store.db, before);
  return Number(result.numDeletedRows ?? 0n);
}
