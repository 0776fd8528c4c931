export { loadConfig, AGENT_PASSTHROUGH_ENV, SECRET_ENV, type Env, type LoadedConfig } from './load.js';
export { ConfigError } from './problems.js';
export { describeConfig, formatConfig } from './describe.js';
export { DEFAULTS, defaultQueueConfig } from './defaults.js';
export { SECTIONS } from './sections.js';
export type * from './types.js';
export { show, maskUrlCredentials } from '../config-schema/index.js';
export { agentCommandProblem, agentEnvProblems, parseAgentCommand } from './agent-env.js';
