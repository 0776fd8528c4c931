export { createHttpApp, type HttpDeps } from './app.js';
export type { ReadinessCheck } from './routes-health.js';
export type { RunSubmission, RunSubmitter } from './routes-runs.js';
export { createHttpServer } from './server.js';
export { dashboardSection, httpSection, INSECURE_HTTP_WARNING, type DashboardSettings, type HttpLimits } from './config-section.js';
export type { ConversationTurnView, RunConversationView } from './conversation-view.js';
