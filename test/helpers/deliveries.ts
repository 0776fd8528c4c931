import { createHash } from 'node:crypto';
import { expect } from 'vitest';
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

/**
 * The verdict of the delivery a webhook request was answered 202 for (`answer`, its body). It names the stored
 * delivery's id; a delivery the database did not store within the accept budget (a loaded
 * machine's SQLite can take that long) is answered `spooled` and gets its id when the drainer
 * moves it into the inbox, so that one is found there by its body and headers, the newest first.
 */
export async function acceptedDelivery(
  store: Store,
  answer: { id?: unknown; spooled?: unknown },
  request: { body: string | Buffer; headers: Record<string, string> },
  timeoutMs?: number,
): Promise<Delivery> {
  if (typeof answer.id === 'number') return processedDelivery(store, answer.id, timeoutMs);
  expect(answer, 'a 202 answer names its delivery or says it is spooled').toMatchObject({ spooled: true });
  const inbox = createInboxStore(store);
  const sha = createHash('sha256').update(request.body).digest('hex');
  const sent = new Map(Object.entries(request.headers).map(([name, value]) => [name.toLowerCase(), value]));
  const drained = await until(
    async () =>
      (await inbox.list({ limit: 500 })).deliveries.find(
        (d) => d.bodySha256 === sha && Object.entries(d.headers).every(([name, value]) => sent.get(name.toLowerCase()) === value),
      ),
    'the spooled delivery in the inbox',
    timeoutMs,
  );
  return processedDelivery(store, drained.id, timeoutMs);
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
