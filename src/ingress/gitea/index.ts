export { createGiteaIngress, type GiteaIngressDeps, type IngressLogger, type WebhookAnswer } from './app.js';
export { allowsStage, WEBHOOK_ROUTES, type WebhookRoute } from './routes.js';
export { classify, readRepository, toForgeEvent } from './normalize.js';
export { readDeliveryHeaders, type DeliveryHeaders } from './headers.js';
