/**
 * Catch-up from the forge API: what webhooks missed while baton was down or
 * unreachable, read from the forge and put in the inbox with source `sync`.
 */
export { catchupSection, CATCHUP_DEFAULTS, type CatchupConfig } from './config-section.js';
export { createCatchupPass, OVERLAP_MS, type CatchupDeps, type CatchupPass, type RepositoryResult } from './sync.js';
export { createCatchupWorker, type CatchupWorkerOptions } from './worker.js';
export { createSyncStore, CURSOR_ORIGIN, type SyncCursor, type SyncStore } from './store.js';
export { planItem, mayHaveNews, issueItem, pullItem, type CatchupItem, type ItemMemory, type ItemPlan, type PlannedEvent } from './plan.js';
export { syntheticDelivery, SYNC_ENDPOINT } from './synthesize.js';
