import type { Store } from '../store/index.js';
import { createIngressState } from './state.js';
import { WEBHOOK_DEFAULTS } from './webhooks-config.js';

/**
 * Deletes remembered delivery ids older than the retention (`webhooks.deliveryRetentionDays`,
 * default 7). Meant for the periodic sweep; returns how many were deleted.
 */
export function pruneDeliveries(
  store: Pick<Store, 'db'>,
  retentionDays: number = WEBHOOK_DEFAULTS.deliveryRetentionDays,
  now: () => number = Date.now,
): Promise<number> {
  return createIngressState(store, now).pruneDeliveries(retentionDays * 24 * 60 * 60 * 1000);
}
