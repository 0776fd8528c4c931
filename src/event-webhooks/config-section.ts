import { httpUrl, invalid, list, mapping, oneOf, secret, section } from '../config-schema/index.js';

export type WebhookEventName =
  | 'run.queued'
  | 'run.held'
  | 'run.started'
  | 'run.progress'
  | 'run.retrying'
  | 'run.succeeded'
  | 'run.failed'
  | 'run.cancelled'
  | 'run.timed_out';

export interface EventWebhook {
  url: string;
  /** HMAC-SHA256 key; the receiver verifies `X-Baton-Signature` with it. */
  secret: string;
  events: WebhookEventName[];
}

export interface EventsConfig {
  webhooks: EventWebhook[];
}

/**
 * Names of outbound event webhooks (`events.webhooks[].events`). `run.progress` is opt-in: it
 * fires for every log batch.
 */
export const WEBHOOK_EVENTS = [
  'run.queued',
  'run.held',
  'run.started',
  'run.progress',
  'run.retrying',
  'run.succeeded',
  'run.failed',
  'run.cancelled',
  'run.timed_out',
] as const;

const DEFAULT_EVENTS = WEBHOOK_EVENTS.filter((e) => e !== 'run.progress');

const webhook = mapping(
  {
    url: httpUrl({ doc: 'the endpoint that receives the events' }),
    secret: secret({
      doc: 'HMAC key the receiver verifies X-Baton-Signature with (16+ characters)',
      check: (value) =>
        value.length < 16 ? invalid('must be at least 16 characters (the HMAC key the receiver verifies with)') : undefined,
    }),
    events: list(oneOf(WEBHOOK_EVENTS, { doc: 'an event name' }), {
      doc: `events to send (default: all but run.progress): ${WEBHOOK_EVENTS.join(', ')}`,
    }),
  },
  {
    check: (w, key) => [
      ...(w.url ? [] : [`${key}.url is required (the endpoint that receives the events)`]),
      ...(w.secret ? [] : [`${key}.secretFile is required (a file holding the HMAC key the receiver verifies with)`]),
      ...(w.events?.length === 0 ? [`${key}.events must not be empty (leave it out for every event but run.progress)`] : []),
    ],
  },
);

/** `events:` in baton.yaml: outbound event webhooks. */
export const eventsSection = section(
  mapping({ webhooks: list(webhook, { doc: 'outbound event webhooks: { url, secretFile, events }' }) }),
  (v): EventsConfig => ({
    webhooks: (v.webhooks ?? []).map((w) => ({ url: w.url!, secret: w.secret!, events: w.events ?? [...DEFAULT_EVENTS] })),
  }),
);
