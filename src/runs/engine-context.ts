import type { Store, TransactionScope } from '../store/index.js';
import type { QueueConfig } from './config-section.js';
import type { PostgresStatements } from './postgres-statements.js';
import type { RetryPolicy } from './retries.js';
import type { RunStatements } from './run-statements.js';
import type { TransitionContext } from './transition.js';

/**
 * What the engine's operations share (engine.ts builds it once): the store, the queue's settings,
 * the clock and the randomness of backoff, the prepared statements, and the after-commit signals
 * of `TransitionContext`.
 */
export interface EngineContext extends TransitionContext {
  store: Store;
  queue: QueueConfig;
  random: () => number;
  defaultMaxAttempts: number;
  statements: RunStatements;
  /** PostgreSQL's one-statement transitions (postgres-statements.ts); undefined on SQLite. */
  postgres: PostgresStatements | undefined;
  retries: RetryPolicy | undefined;
}

/** Runs `fn` in a transaction of its own. */
export function write<T>(ctx: Pick<EngineContext, 'store'>, fn: (scope: TransactionScope) => Promise<T>): Promise<T> {
  return ctx.store.transaction((_trx, scope) => fn(scope));
}
