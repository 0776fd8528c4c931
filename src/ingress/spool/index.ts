export { createSpool, type Spool, type SpoolHealth, type SpoolOptions } from './spool.js';
export { SpoolLockError } from './lock.js';
export { createSpoolDrainer, type SpoolDrainer } from './drainer.js';
export { createDeliveryAcceptor, type DeliveryAcceptorDeps, type WebhookAnswer } from './accept.js';
