import { createInboxStore, DELIVERY_SOURCE, type Delivery, type NewDelivery } from '../../src/ingress/index.js';
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

/** A webhook delivery to store directly in the inbox: an `issues` event on acme/app#1, as `over` changes it. */
export function newDelivery(over: Partial<NewDelivery> = {}): NewDelivery {
  return {
    source: DELIVERY_SOURCE.webhook,
    endpoint: '/webhook/gitea',
    deliveryId: null,
    event: 'issues',
    eventType: 'issues',
    headers: { 'x-gitea-event': 'issues' },
    body: '{"action":"opened"}',
    repository: 'acme/app',
    number: 1,
    ...over,
  };
}
