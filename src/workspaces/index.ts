export * from './types.js';
export { createMemoryProvider, type MemoryProvider, type MemoryProviderOptions } from './memory.js';
export { createLocalProvider, runnerEnv, type LocalProviderOptions } from './local/index.js';
