export {
  createGiteaIngress,
  WEBHOOK_ROUTES,
  type GiteaIngressDeps,
  type IngressLogger,
  type WebhookAnswer,
  type WebhookRoute,
} from './gitea/index.js';
export { createGitHubIngress, GITHUB_WEBHOOK_PATH, type GitHubIngressDeps } from './github/index.js';
export { createGitLabIngress, GITLAB_WEBHOOK_PATH, type GitLabIngressDeps } from './gitlab/index.js';
export { createIngressState, type IngressState, type IssueRef } from './state.js';
export {
  parseWebhooksConfig,
  webhooksSection,
  isAllowed,
  ALLOW_UNSIGNED_WARNING,
  WRITE_PERMISSION_OFF_WARNING,
  WEBHOOK_DEFAULTS,
  type WebhooksConfig,
} from './webhooks-config.js';
export { createPermissionCache, canWrite, type Permission, type PermissionLookup } from './permissions.js';
export { signBody, verifySignature } from './signature.js';
export { pruneProcessedDeliveries } from './prune.js';
// Only what other modules use: the worker, the processor and the rest of the inbox's types stay
// inside ingress/ (src/ingress/inbox/index.ts).
export {
  createInboxStore,
  createInboxProcessing,
  LABEL_MEMORY_SCOPE,
  labelMemoryScope,
  syncEndpoint,
  DELIVERY_SOURCE,
  type Delivery,
  type InboxProcessing,
  type InboxStore,
  type NewDelivery,
} from './inbox/index.js';
export { pullRequestHeads } from './heads.js';
export { factOf, forgeFacts, reviewFact } from './facts.js';
export {
  createDeliveryInspector,
  DELIVERY_SOURCES,
  InspectorError,
  MASK,
  maskBody,
  maskHeaders,
  type DeliveriesHealth,
  type DeliveryDetail,
  type DeliveryHistoryEntry,
  type DeliveryInspector,
  type DeliveryView,
  type InspectorFilter,
  type InspectorPage,
  type InspectorSource,
} from './inspector.js';
export { seenInSignedDelivery } from './known-repositories.js';
export { createSpool, createSpoolDrainer, SpoolLockError, type Spool, type SpoolDrainer, type SpoolHealth } from './spool/index.js';
