export * from './states.js';
export * from './types.js';
export { IllegalTransitionError, LeaseLostError, TransitionError } from './errors.js';
export { runKey, slotKey, runIsOf, FORGES, forgeIsNamed, forgeRepository, type ForgeItem, type ForgeName } from './keys.js';
export { totalTokens, startOfUtcDay } from './usage.js';
export { createRunQueries } from './queries.js';
export { ensureRunsSearch, readRunsSearch } from './search-index.js';
export { createCallbackTokenChecks, type CallbackTokenChecks } from './callback-tokens.js';
export { branchNamesIssue, type IssueRun, type IssueStep, type IssueTotals, type IssueView } from './issue-view.js';
export {
  MAX_USAGE_DAYS,
  USAGE_GROUPS,
  daysBetween,
  parseUtcDay,
  utcDay,
  type UsageAmounts,
  type UsageGroup,
  type UsageGroupBy,
  type UsageQuery,
  type UsageReport,
} from './usage-report.js';
export { hookFor } from './transition.js';
export { createRunEngine, hashCallbackToken, NOTIFY_CHANNEL, type RunService, type RunEngineOptions } from './engine.js';
export { createDispatcher, type Dispatcher, type DispatcherOptions } from './dispatcher.js';
export { createTeardownWorker, type TeardownWorker, type TeardownWorkerOptions } from './teardown.js';
export { createScheduler, dueSlot, type Schedule, type Scheduler, type SchedulerOptions } from './scheduler.js';
export { createSweeper, type Sweeper, type SweeperOptions } from './sweeper.js';
export {
  queueSection,
  cleanupSection,
  runLogSection,
  DEFAULTS,
  defaultQueueConfig,
  type CleanupConfig,
  type QueueConfig,
} from './config-section.js';
export { registerRunMetrics, type RunMetricsOptions } from './metrics.js';
export {
  DEFAULT_RUN_LOG_MAX_BYTES,
  MIN_RUN_LOG_MAX_BYTES,
  type RunLogLimits,
  type ProgressBatch,
  type ProgressAppended,
} from './run-log.js';
export { isTransientFailure, TRANSIENT_FAILURES, type RetryPolicy, type TransientFailure } from './retries.js';
export { createBudgetService, type BudgetService, type BudgetsOverview } from './budget-service.js';
export { addUsage, MAX_QUESTION_CHARS, MAX_TRANSCRIPT_BYTES, type Conversation, type Question } from './conversation.js';
