import { createInboxStore, type Delivery } from '../../src/ingress/index.js';
import type { Store } from '../../src/store/index.js';
import { until } from './until.js';

/**
 * Waits until the inbox worker has given stored delivery `id` (the `id` of a webhook's 202 answer)
 * its verdict, reading the database the server writes to.
 */
export function processedDelivery(store: Store, id: number, timeoutMs?: number): Promise<Delivery> {
  const inbox = createInboxStore(store);
  return until(
    async () => {
      const d = await inbox.get(id);
      return d?.status === 'processed' ? d : undefined;
    },
    `delivery ${id} processed`,
    timeoutMs,
  );
}
