import type { Migration } from './types.js';

/**
 * Drops the ingress's first dedup memory (0010-ingress's `webhook_deliveries`, delivery ids already
 * acted on, with its index): since the inbox (0045) took dedup over, nothing reads or writes it.
 * The label memory of 0010 (`webhook_labels`) stays.
 */
export const dropWebhookDeliveries: Migration = {
  name: '0080-drop-webhook-deliveries',
  sqlite: [`DROP TABLE webhook_deliveries`],
  postgres: [`DROP TABLE webhook_deliveries`],
};
