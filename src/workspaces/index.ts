export * from './types.js';
export { createMemoryProvider, type MemoryProvider, type MemoryProviderOptions } from './memory.js';
export * from './local/index.js';
export * from './coder/index.js';
export { teardownWorkspace, TeardownIncompleteError, type TeardownOptions, type TeardownResult } from './teardown.js';
export { reconcile, type ReconcileAction, type ReconcileItem, type ReconcileOptions, type ReconcileRuns } from './reconcile.js';
export { claudeSection } from './config-section.js';
