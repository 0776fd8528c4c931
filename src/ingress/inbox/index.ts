export { createInboxStore, INBOX_CHANNEL, sha256Hex, subjectOf, type EarlierCopy, type InboxStore } from './store.js';
export { createDeliveryProcessor, type DeliveryProcessor, type ProcessOptions, type RunAnswer } from './process.js';
export { LABEL_MEMORY_SCOPE, labelMemoryScope, syncEndpoint } from './normalize.js';
export { createInboxWorker, type InboxWorker, type InboxWorkerOptions } from './worker.js';
export { createInboxProcessing, type InboxProcessing, type InboxProcessingDeps } from './processing.js';
export { DeliveryLeaseLostError } from './errors.js';
export * from './types.js';
