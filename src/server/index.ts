/**
 * The composition root: `createApp` builds every part from the config in dependency order and
 * owns the process lifecycle (start-up with migration retries, readiness, ordered shutdown).
 */
export { createApp, type App, type AppDeps } from './app.js';
export { StartupError, type Worker } from './lifecycle.js';
export { createConfiguredProvider } from './workspaces.js';
export { loadConfig, AGENT_PASSTHROUGH_ENV, SECRET_ENV, type LoadedConfig } from './load-config.js';
export { describeConfig, formatConfig } from './describe-config.js';
export { SECTIONS } from './config-sections.js';
export type * from './config-types.js';
