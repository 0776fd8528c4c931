export {
  createGiteaIngress,
  WEBHOOK_ROUTES,
  type GiteaIngressDeps,
  type IngressLogger,
  type RunAnswer,
  type WebhookAnswer,
  type WebhookRoute,
} from './gitea/index.js';
export { createIngressState, DEFAULT_DELIVERY_RETENTION_MS, type IngressState, type IssueRef } from './state.js';
export {
  parseWebhooksConfig,
  webhooksSection,
  isAllowed,
  ALLOW_UNSIGNED_WARNING,
  WEBHOOK_DEFAULTS,
  type WebhooksConfig,
} from './webhooks-config.js';
export { createPermissionCache, canWrite, type Permission, type PermissionLookup } from './permissions.js';
export { signBody, verifySignature } from './signature.js';
export { pruneDeliveries } from './prune.js';
