import { createHash } from 'node:crypto';
import type { EventWebhook } from './config-section.js';
import { hookFor, type RunEventType, type TransitionHook } from '../runs/index.js';
import type { TransactionScope } from '../store/index.js';
import { WEBHOOK_EVENT_OF, webhookBody, webhookEventOf } from './events.js';

/** Outbox kind of event webhook entries. */
export const WEBHOOK_KIND = 'webhook';

/** What an event webhook outbox entry carries. The secret is not stored: it is looked up by URL at delivery. */
export interface WebhookEntryPayload {
  url: string;
  event: string;
  /** Stable per endpoint and event: receivers dedupe retries on `X-Baton-Delivery`. */
  deliveryId: string;
  /** The exact JSON body, serialised once so every attempt sends (and signs) the same bytes. */
  body: string;
}

/** The outbox's in-transaction enqueue (`outbox.enqueue`), as far as webhooks need it. */
export type OutboxEnqueue = (
  scope: TransactionScope,
  entry: { kind: string; payload: unknown; orderingKey?: string | null; dedupKey?: string | null; runId?: number | null },
) => Promise<unknown>;

/** Short, stable name of an endpoint for keys (the URL may be long or carry credentials). */
export function endpointKey(url: string): string {
  return createHash('sha256').update(url).digest('hex').slice(0, 16);
}

/**
 * A run-engine hook that writes one outbox entry per subscribed endpoint in the transition's own
 * transaction, so an event is announced if and only if it happened. Entries of one run and one
 * endpoint share an ordering key: that endpoint gets the run's events in order, and a slow
 * endpoint holds up only itself.
 */
export function createWebhookHook(options: { webhooks: readonly EventWebhook[]; enqueue: OutboxEnqueue }): TransitionHook {
  const { webhooks, enqueue } = options;
  const subscribed = (Object.keys(WEBHOOK_EVENT_OF) as RunEventType[]).filter((type) =>
    webhooks.some((webhook) => webhook.events.includes(WEBHOOK_EVENT_OF[type]!)),
  );
  return hookFor(subscribed, async (scope, { run, event }) => {
    const name = webhookEventOf(event);
    if (!name) return;
    let body: string | undefined;
    for (const webhook of webhooks) {
      if (!webhook.events.includes(name)) continue;
      body ??= JSON.stringify(webhookBody(name, event, run));
      const endpoint = endpointKey(webhook.url);
      const payload: WebhookEntryPayload = { url: webhook.url, event: name, deliveryId: `${event.id}-${endpoint}`, body };
      await enqueue(scope, {
        kind: WEBHOOK_KIND,
        payload,
        orderingKey: `webhook:${endpoint}:run:${run.id}`,
        dedupKey: `webhook:${endpoint}:event:${event.id}`,
        runId: run.id,
      });
    }
  });
}
