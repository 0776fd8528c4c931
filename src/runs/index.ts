export * from './states.js';
export * from './types.js';
export { runKey } from './keys.js';
export { backoffDelay } from './backoff.js';
export { createRunEngine, hashCallbackToken, LeaseLostError, NOTIFY_CHANNEL, type FullRunEngine, type RunEngineOptions } from './engine.js';
export { createDispatcher, type Dispatcher, type DispatcherOptions } from './dispatcher.js';
export { createTeardownWorker, type TeardownWorker, type TeardownWorkerOptions } from './teardown.js';
export { createScheduler, type Schedule, type Scheduler, type SchedulerOptions } from './scheduler.js';
export { createSweeper, type Sweeper, type SweeperOptions } from './sweeper.js';
export {
  parseRunLogConfig,
  DEFAULT_RUN_LOG_MAX_BYTES,
  MIN_RUN_LOG_MAX_BYTES,
  type RunLogLimits,
  type ProgressBatch,
  type ProgressAppended,
} from './run-log.js';
