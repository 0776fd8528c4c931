export { createGiteaIngress, type GiteaIngressDeps, type IngressLogger, type RunAnswer, type WebhookAnswer } from './app.js';
export { WEBHOOK_ROUTES, type WebhookRoute } from './routes.js';
export { classify, toForgeEvent } from './normalize.js';
export { readDeliveryHeaders, type DeliveryHeaders } from './headers.js';
