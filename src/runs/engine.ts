import { createBudgetGate } from './budget-holds.js';
import { consoleLogger, createEvents, type BackgroundLogger } from '../background/index.js';
import type { BudgetsConfig } from '../budgets/index.js';
import type { QueueConfig } from './config-section.js';
import type { Store, TransactionScope } from '../store/index.js';
import { hashCallbackToken } from './callback-tokens.js';
import { claimInOneTrip, claimInTransaction, extendLease } from './claim.js';
import { completeRun } from './complete.js';
import { createConversationOps, storeTranscript, type Question } from './conversation.js';
import { pauseDispatch, resumeDispatch } from './dispatch-state.js';
import { write, type EngineContext } from './engine-context.js';
import { enqueueInScope, enqueueRun, fireSchedule } from './enqueue.js';
import { failAttempt } from './fail-attempt.js';
import { requireRun } from './finish.js';
import { createRunMaintenance, type RunMaintenance } from './maintenance.js';
import { markRunning } from './mark-running.js';
import { cancelInTransaction, retryIn, retryRun } from './operator-actions.js';
import { preparePostgresStatements } from './postgres-statements.js';
import { recordWorkspace } from './record-workspace.js';
import { createReplicaHints, NOTIFY_CHANNEL } from './replica-hints.js';
import type { RetryPolicy } from './retries.js';
import { RUN_EVENT } from './states.js';
import {
  appendProgressInTransaction,
  DEFAULT_RUN_LOG_MAX_BYTES,
  type ProgressAppended,
  type ProgressBatch,
  type RunLogLimits,
} from './run-log.js';
import { prepareRunStatements } from './run-statements.js';
import { recordEvent, scheduleTeardown } from './transition.js';
import type { EnqueueResult, Run, RunEngine, RunOutcome, RunSignals, TaskRequest, TransitionHook } from './types.js';
import { hooksWriteFor } from './write-statement.js';

export { hashCallbackToken, NOTIFY_CHANNEL };

export interface RunEngineOptions {
  store: Store;
  queue: QueueConfig;
  /** Injectable clock (tests drive backoff and cron with it). @default Date.now */
  now?: () => number;
  random?: () => number;
  /** Called inside each event's transaction (the outbox writes its rows here). */
  hooks?: readonly TransitionHook[];
  /** Where failing signal listeners are reported. @default consoleLogger (stderr) */
  logger?: BackgroundLogger;
  /** How much of each run's log the database keeps. @default { maxBytes: DEFAULT_RUN_LOG_MAX_BYTES } */
  runLog?: RunLogLimits;
  /**
   * Daily budgets: usage is counted at each completion and spent budgets hold runs at the claim
   * (budget-holds.ts). Without it no usage is counted and nothing is held.
   */
  budgets?: BudgetsConfig;
  /**
   * Retries of agent runs that fail for a reason that passes (retries.ts): how many attempts a
   * stage's runs get. Without it every failure is final.
   */
  retries?: RetryPolicy;
}

/**
 * Every change the rest of baton makes to runs, as createRunEngine builds it: the transitions
 * (RunEngine) and the sweeps (RunMaintenance). It reads nothing for others: reads are
 * `createRunQueries` (queries.ts) and the callback-token checks `createCallbackTokenChecks`
 * (callback-tokens.ts), built beside it at the composition root.
 */
export interface RunService extends RunEngine, RunMaintenance {
  /**
   * Enqueues inside the caller's transaction, so what else it writes (the inbox's verdict on the
   * delivery that asked for the run) commits or rolls back with the run.
   */
  enqueueIn(scope: TransactionScope, request: TaskRequest): Promise<EnqueueResult>;
  /** Records a cron slot and enqueues its runs in one transaction; false when the slot already fired. */
  fireSchedule(name: string, slot: number, requests: TaskRequest[]): Promise<boolean>;
  /**
   * Tells this process's dispatchers to look again without a database change (a test that moved
   * its clock past a run's due time).
   */
  wake(): void;
  /** Queues removal of a workspace that outlived its claim (created after the run was cancelled). */
  requestTeardown(runId: number | null, workspaceName: string): Promise<void>;
  /** running | provisioning → waiting: the agent asked; the question, its session and the turn's usage are kept (conversation.ts). */
  park(runId: number, question: Question, outcome: RunOutcome): Promise<Run>;
  /** waiting → queued: a reply resumes the session in a new workspace, inside the caller's transaction. */
  resumeIn(scope: TransactionScope, runId: number, reply: { text: string; by: string }): Promise<Run>;
  /** Waiting runs that asked longer than `waitMs` ago end `expired`. Returns them. */
  expireWaiting(waitMs: number): Promise<Run[]>;
  /** Keeps the transcript a runner uploaded (JSONL: its turns' streams, and the session files of a turn that asked), gzip'd and bounded; returns the stored size. */
  storeTranscript(runId: number, jsonl: Buffer): Promise<number>;
  /** `cancel` inside the caller's transaction (a ChatOps command and its verdict commit together). */
  cancelIn(scope: TransactionScope, runId: number, reason?: string): Promise<Run>;
  /**
   * `retry` inside the caller's transaction; a live run of the same key is a `conflict`
   * TransitionError, found before anything is written.
   */
  retryIn(scope: TransactionScope, runId: number): Promise<Run>;
  /** Appends a log batch from the workspace, keeping the run's stored log within `runLog` (see run-log.ts). */
  appendProgress(runId: number, batch: ProgressBatch): Promise<ProgressAppended>;
}

/**
 * The run engine: every change of a run is one transaction that checks the transition, writes the
 * run and its `run_events` row, lets the hooks add their rows (outbox), and registers what to
 * announce once it has committed (local listeners, dispatchers, other replicas). This factory only
 * assembles: each operation is a file of its own (enqueue.ts, claim.ts, record-workspace.ts,
 * mark-running.ts, fail-attempt.ts, complete.ts, operator-actions.ts, conversation.ts,
 * dispatch-state.ts, run-log.ts), the sweeps are maintenance.ts, the replica wake-ups
 * replica-hints.ts. Reads are queries.ts and callback-tokens.ts, not the engine's.
 */
export function createRunEngine(options: RunEngineOptions): RunService {
  const { store, queue } = options;
  const signals = createEvents<RunSignals>(options.logger ?? consoleLogger);
  const runLog = options.runLog ?? { maxBytes: DEFAULT_RUN_LOG_MAX_BYTES };
  const hintReplicas = createReplicaHints(store);
  const gate = options.budgets ? createBudgetGate(options.budgets) : undefined;
  const ctx: EngineContext = {
    store,
    queue,
    now: options.now ?? Date.now,
    random: options.random ?? Math.random,
    statements: prepareRunStatements(store),
    postgres: store.dialect === 'postgres' ? preparePostgresStatements(store) : undefined,
    retries: options.retries,
    // The usage hook goes last: it counts what the transition committed, like any other hook.
    hooks: [...(options.hooks ?? []), ...(gate ? [gate.usageHook] : [])],
    defaultMaxAttempts: queue.maxAttempts,
    announce(scope, event, run) {
      scope.afterCommit(() => {
        hintReplicas('events');
        signals.emit('run:event', event, run);
      });
    },
    wake(scope, replicas) {
      scope.afterCommit(() => {
        hintReplicas(replicas ? 'wake' : 'events');
        signals.emit('queue:wake');
      });
    },
    teardownQueued(scope) {
      scope.afterCommit(() => signals.emit('teardown:queued'));
    },
  };
  const { now, postgres: statements } = ctx;
  const conversations = createConversationOps(ctx, store.dialect);
  const beforeClaim = gate && ((scope: TransactionScope) => gate.applyInClaim(scope, ctx));

  const engine: RunService = {
    ...createRunMaintenance(ctx),

    enqueue: (request) => enqueueRun(ctx, request),
    enqueueIn: (scope, request) => enqueueInScope(scope, ctx, request),
    fireSchedule: (name, slot, requests) => fireSchedule(ctx, name, slot, requests),

    claim(max = Number.MAX_SAFE_INTEGER) {
      // Nothing to run under the lock and nothing for hooks to write: one round trip.
      if (statements && !hooksWriteFor(ctx, RUN_EVENT.claimed) && !beforeClaim && queue.perRepositoryConcurrency === 0) {
        return claimInOneTrip(store, ctx, statements, queue, max);
      }
      return write(ctx, (scope) => claimInTransaction(scope, store.dialect, ctx, queue, max, statements, beforeClaim));
    },
    heartbeat: (runId, leaseToken) => extendLease(store, queue, now(), runId, leaseToken),
    recordWorkspace: (runId, leaseToken, details) => recordWorkspace(ctx, runId, leaseToken, details),
    markRunning: (runId, leaseToken, details) => markRunning(ctx, runId, leaseToken, details),
    failAttempt: (runId, leaseToken, error, opts = {}) => failAttempt(ctx, runId, leaseToken, error, opts),
    complete: (runId, outcome) => completeRun(ctx, runId, outcome),

    cancel(runId, reason = 'cancelled by operator') {
      return write(ctx, (scope) => cancelInTransaction(scope, ctx, runId, reason));
    },
    cancelIn: (scope, runId, reason) => cancelInTransaction(scope, ctx, runId, reason),
    retryIn: (scope, runId) => retryIn(scope, ctx, runId),
    retry: (runId) => retryRun(ctx, runId),

    park(runId, question, outcome) {
      return write(ctx, async (scope) => conversations.park(scope, await requireRun(scope, ctx, runId), question, outcome));
    },
    resumeIn: (scope, runId, reply) => conversations.resumeIn(scope, runId, reply),
    expireWaiting(waitMs) {
      return write(ctx, (scope) => conversations.expireIn(scope, now() - waitMs));
    },
    storeTranscript: (runId, jsonl) => storeTranscript(store.db, runId, jsonl, now()),

    pause: () => pauseDispatch(ctx),
    resume: () => resumeDispatch(ctx),

    appendEvent(runId, type, data) {
      return write(ctx, async (scope) => recordEvent(scope, ctx, await requireRun(scope, ctx, runId), type, data));
    },
    appendProgress(runId, batch) {
      return write(ctx, async (scope) =>
        appendProgressInTransaction(scope, ctx, await requireRun(scope, ctx, runId), batch, runLog, store.dialect),
      );
    },

    async requestTeardown(runId, workspaceName) {
      await write(ctx, (scope) => scheduleTeardown(scope, ctx, { id: runId, workspaceName }, now()));
    },

    on: signals.on,
    wake() {
      signals.emit('queue:wake');
    },
  };
  return engine;
}
