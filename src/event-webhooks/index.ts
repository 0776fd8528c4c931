export { createWebhookDelivery, type WebhookDeliveryOptions, type WebhookDeliveryResult } from './delivery.js';
export { WEBHOOK_EVENT_OF, webhookBody, webhookEventOf, type WebhookBody } from './events.js';
export { createWebhookHook, endpointKey, WEBHOOK_KIND, type OutboxEnqueue, type WebhookEntryPayload } from './hook.js';
export {
  DEFAULT_TOLERANCE_SECONDS,
  DELIVERY_HEADER,
  EVENT_HEADER,
  SIGNATURE_HEADER,
  signWebhook,
  TIMESTAMP_HEADER,
  verifyWebhook,
  type VerifyResult,
} from './signature.js';
export { eventsSection, WEBHOOK_EVENTS, type EventsConfig, type EventWebhook, type WebhookEventName } from './config-section.js';
