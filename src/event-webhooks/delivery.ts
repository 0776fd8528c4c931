import { PermanentError, RetryLaterError } from '../background/index.js';
import type { EventWebhook } from './config-section.js';
import type { Counter } from '../metrics/index.js';
import type { WebhookEntryPayload } from './hook.js';
import { DELIVERY_HEADER, EVENT_HEADER, SIGNATURE_HEADER, signWebhook, TIMESTAMP_HEADER } from './signature.js';

export interface WebhookDeliveryOptions {
  webhooks: readonly EventWebhook[];
  /** @default globalThis.fetch */
  fetch?: typeof fetch;
  /** @default Date.now */
  now?: () => number;
  /** Per attempt; must stay below the outbox lease. @default 10000 */
  timeoutMs?: number;
  /** `baton_webhook_deliveries_total{result}`: delivered, retried, failed. */
  deliveries?: Counter;
}

/** What a delivered entry records. */
export interface WebhookDeliveryResult {
  status: number;
}

/**
 * Delivers one event webhook outbox entry: POSTs the stored body, signed afresh with the current
 * time. 2xx is delivered; 408, 429 and 5xx and network errors are retried (429 honours
 * Retry-After); other 4xx and endpoints no longer configured fail permanently.
 */
export function createWebhookDelivery(
  options: WebhookDeliveryOptions,
): (entry: { payload: unknown; attempts: number }) => Promise<WebhookDeliveryResult> {
  const doFetch = options.fetch ?? fetch;
  const now = options.now ?? Date.now;
  const timeoutMs = options.timeoutMs ?? 10_000;

  return async (entry) => {
    const payload = entry.payload as Partial<WebhookEntryPayload> | null;
    if (!payload || typeof payload.url !== 'string' || typeof payload.body !== 'string') {
      options.deliveries?.inc({ result: 'failed' });
      throw new PermanentError('webhook entry has no url or body');
    }
    const webhook = options.webhooks.find((w) => w.url === payload.url);
    if (!webhook) {
      options.deliveries?.inc({ result: 'failed' });
      throw new PermanentError('the endpoint is no longer in events.webhooks');
    }
    const timestamp = Math.floor(now() / 1000);
    let response: Response;
    try {
      response = await doFetch(webhook.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'baton-webhooks',
          [EVENT_HEADER]: String(payload.event),
          [DELIVERY_HEADER]: String(payload.deliveryId),
          [TIMESTAMP_HEADER]: String(timestamp),
          [SIGNATURE_HEADER]: signWebhook(webhook.secret, timestamp, payload.body),
        },
        body: payload.body,
        redirect: 'manual',
        signal: AbortSignal.timeout(timeoutMs),
      });
      await response.body?.cancel().catch(() => {});
    } catch (err) {
      options.deliveries?.inc({ result: 'retried' });
      // The URL may hold credentials: name the host only.
      throw new Error(
        `POST to ${hostOf(webhook.url)} failed: ${(err as Error).name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : (err as Error).message}`,
        { cause: err },
      );
    }
    const { status } = response;
    if (status >= 200 && status < 300) {
      options.deliveries?.inc({ result: 'delivered' });
      return { status };
    }
    const message = `${hostOf(webhook.url)} answered ${status}`;
    if (status === 429) {
      options.deliveries?.inc({ result: 'retried' });
      const retryAfter = Number(response.headers.get('retry-after'));
      throw new RetryLaterError(message, {
        delayMs: Number.isFinite(retryAfter) && retryAfter > 0 ? Math.min(retryAfter, 3600) * 1000 : 60_000,
      });
    }
    if (status === 408 || status >= 500) {
      options.deliveries?.inc({ result: 'retried' });
      throw new Error(message);
    }
    options.deliveries?.inc({ result: 'failed' });
    throw new PermanentError(`${message}; not retried`);
  };
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return 'the endpoint';
  }
}
