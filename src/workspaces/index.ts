export * from './types.js';
export { createMemoryProvider, type MemoryProvider, type MemoryProviderOptions } from './memory.js';
