export { loadConfig, FILE_SECTIONS, AGENT_PASSTHROUGH_ENV, SECRET_ENV, type Env, type LoadedConfig } from './load.js';
export { ConfigError, Problems, show } from './problems.js';
export { describeConfig, maskUrlPassword } from './describe.js';
export { DEFAULTS } from './defaults.js';
export type * from './types.js';
export { WEBHOOK_EVENTS } from './operator.js';
