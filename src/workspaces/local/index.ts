export { createLocalProvider, runnerEnv, type LocalProviderOptions } from './provider.js';
