export { createApp, type App, type AppDeps } from './app.js';
export { HttpError } from './errors.js';
export type { ReadinessCheck } from './routes-health.js';
