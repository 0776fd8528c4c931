import { createBudgetGate } from './budget-holds.js';
import { backoffDelay, consoleLogger, createEvents, type BackgroundLogger } from '../background/index.js';
import type { BudgetsConfig } from '../budgets/index.js';
import type { QueueConfig } from './config-section.js';
import type { Store, TransactionScope } from '../store/index.js';
import { earlierTokenHashes, hashCallbackToken, rememberReplacedToken } from './callback-tokens.js';
import { claimInOneTrip, claimInTransaction } from './claim.js';
import { completeRun } from './complete.js';
import { createConversationOps, storeTranscript, type Question } from './conversation.js';
import { write, type EngineContext } from './engine-context.js';
import { enqueueInTransaction, queuedRunValues } from './enqueue.js';
import { LeaseLostError } from './errors.js';
import { finish, requeue, requireLease, requireRun } from './finish.js';
import { createRunMaintenance, type RunMaintenance } from './maintenance.js';
import { cancelInTransaction, retryIn, retryRun } from './operator-actions.js';
import { createReplicaHints, NOTIFY_CHANNEL } from './replica-hints.js';
import type { RetryPolicy } from './retries.js';
import { toRun } from './rows.js';
import { RUN_EVENT, RUN_STATUS } from './states.js';
import {
  appendProgressInTransaction,
  DEFAULT_RUN_LOG_MAX_BYTES,
  type ProgressAppended,
  type ProgressBatch,
  type RunLogLimits,
} from './run-log.js';
import { enqueueValues, preparePostgresStatements, toEnqueued } from './postgres-statements.js';
import { prepareRunStatements } from './run-statements.js';
import { recordEvent, recordTransition, scheduleTeardown } from './transition.js';
import type { EnqueueResult, Run, RunEngine, RunOutcome, RunSignals, TaskRequest, TransitionHook } from './types.js';
import { firstWritten, hooksWriteFor, writeStatement } from './write-statement.js';

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
 * announce once it has committed (local listeners, dispatchers, other replicas). Reads are
 * queries.ts and callback-tokens.ts, not the engine's; the sweeps are maintenance.ts, the replica
 * wake-ups replica-hints.ts.
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

    async enqueue(request) {
      for (;;) {
        const slow = (scope: TransactionScope) => enqueueInTransaction(scope, ctx, request);
        let result: EnqueueResult | null;
        if (statements) {
          const values = queuedRunValues(ctx, request);
          result = await writeStatement(
            ctx,
            RUN_EVENT.queued,
            statements.enqueue,
            enqueueValues(values),
            ([row]) => {
              // No row: a live run holds the key; the step-by-step path coalesces or follows up.
              if (!row) return undefined;
              const written = toEnqueued(row, values);
              return { result: { outcome: 'queued', run: written.run } as EnqueueResult, written: [written] };
            },
            slow,
          );
        } else {
          result = await write(ctx, slow);
        }
        if (result) return result;
      }
    },

    claim(max = Number.MAX_SAFE_INTEGER) {
      // Nothing to run under the lock and nothing for hooks to write: one round trip.
      if (statements && !hooksWriteFor(ctx, RUN_EVENT.claimed) && !beforeClaim && queue.perRepositoryConcurrency === 0) {
        return claimInOneTrip(store, ctx, statements, queue, max);
      }
      return write(ctx, (scope) => claimInTransaction(scope, store.dialect, ctx, queue, max, statements, beforeClaim));
    },
    async heartbeat(runId, leaseToken) {
      const t = now();
      const result = await store.db
        .updateTable('runs')
        .set({ lease_expires_at: t + queue.leaseMs, updated_at: t })
        .where('id', '=', runId)
        .where('status', '=', RUN_STATUS.provisioning)
        .where('lease_token', '=', leaseToken)
        .executeTakeFirst();
      return Number(result.numUpdatedRows) === 1;
    },

    recordWorkspace(runId, leaseToken, details) {
      return write(ctx, async (scope) => {
        let current = scope.trx.selectFrom('runs').select(['status', 'lease_token', 'callback_token_hash']).where('id', '=', runId);
        if (store.dialect === 'postgres') current = current.forUpdate();
        const row = await current.executeTakeFirst();
        if (!row || row.status !== RUN_STATUS.provisioning || row.lease_token !== leaseToken) throw new LeaseLostError(runId);
        // A re-claimed run may adopt the workspace its earlier attempt started, whose runner
        // reports with the earlier token: that one stays valid for the run (callback-tokens.ts).
        if (row.callback_token_hash !== details.callbackTokenHash) {
          await rememberReplacedToken(scope.trx, runId, row.callback_token_hash, now());
        }
        const result = await scope.trx
          .updateTable('runs')
          .set({
            workspace_name: details.workspaceName,
            callback_token_hash: details.callbackTokenHash,
            token_cap: details.tokenCap ?? null,
            max_duration_ms: details.maxDurationMs ?? null,
            updated_at: now(),
          })
          .where('id', '=', runId)
          .where('status', '=', RUN_STATUS.provisioning)
          .where('lease_token', '=', leaseToken)
          .executeTakeFirst();
        if (Number(result.numUpdatedRows) !== 1) throw new LeaseLostError(runId);
        // The workspace of an earlier attempt, if it lives, was started with one of these.
        return { earlierTokenHashes: await earlierTokenHashes(scope.trx, runId) };
      });
    },

    markRunning(runId, leaseToken, details) {
      if (statements) {
        return writeStatement(
          ctx,
          RUN_EVENT.started,
          statements.markRunning,
          [runId, leaseToken, details.workspaceId, now()],
          (rows) => {
            const written = firstWritten(rows);
            if (!written) throw new LeaseLostError(runId);
            return { result: written.run, written: [written] };
          },
          () => Promise.reject(new LeaseLostError(runId)),
        );
      }
      return write(ctx, async (scope) => {
        const t = now();
        // The lease check is the UPDATE's own condition: one round trip instead of lock-then-write.
        const row = await scope.trx
          .updateTable('runs')
          .set({
            status: RUN_STATUS.running,
            workspace_id: details.workspaceId,
            lease_token: null,
            lease_expires_at: null,
            started_at: t,
            updated_at: t,
          })
          .where('id', '=', runId)
          .where('status', '=', RUN_STATUS.provisioning)
          .where('lease_token', '=', leaseToken)
          .returningAll()
          .executeTakeFirst();
        if (!row) throw new LeaseLostError(runId);
        const started = toRun(row);
        await recordTransition(scope, ctx, started, RUN_STATUS.provisioning, RUN_EVENT.started, { workspace: started.workspaceName });
        return started;
      });
    },

    failAttempt(runId, leaseToken, error, opts = {}) {
      return write(ctx, async (scope) => {
        const run = await requireLease(scope, ctx, runId, leaseToken);
        if (opts.permanent) return finish(scope, ctx, run, RUN_STATUS.failed, { last_error: error }, { error });
        // A full disk or a lack of descriptors passes: the run waits it out (backing off up to
        // backoffMaxMs) instead of dying of it; its timeline says why it waits.
        if (run.attempts >= run.maxAttempts && !opts.transient) {
          return finish(scope, ctx, run, RUN_STATUS.dead, { last_error: error }, { error, attempts: run.attempts });
        }
        const delayMs = backoffDelay({ baseMs: queue.backoffBaseMs, maxMs: queue.backoffMaxMs }, run.attempts, ctx.random);
        const queued = await requeue(scope, ctx, run, now() + delayMs, error);
        await recordTransition(scope, ctx, queued, run.status, RUN_EVENT.retrying, {
          error,
          attempt: run.attempts,
          delayMs,
          ...(opts.transient ? { transient: opts.transient } : {}),
        });
        return queued;
      });
    },

    complete: (runId, outcome) => completeRun(ctx, runId, outcome),

    cancel(runId, reason = 'cancelled by operator') {
      return write(ctx, (scope) => cancelInTransaction(scope, ctx, runId, reason));
    },

    cancelIn: (scope, runId, reason) => cancelInTransaction(scope, ctx, runId, reason),

    park(runId, question, outcome) {
      return write(ctx, async (scope) => conversations.park(scope, await requireRun(scope, ctx, runId), question, outcome));
    },
    resumeIn: (scope, runId, reply) => conversations.resumeIn(scope, runId, reply),
    expireWaiting(waitMs) {
      return write(ctx, (scope) => conversations.expireIn(scope, now() - waitMs));
    },
    storeTranscript: (runId, jsonl) => storeTranscript(store.db, runId, jsonl, now()),

    retryIn: (scope, runId) => retryIn(scope, ctx, runId),
    retry: (runId) => retryRun(ctx, runId),

    async pause() {
      await store.db.updateTable('dispatch_state').set({ paused: 1, updated_at: now() }).where('id', '=', 1).execute();
    },

    async resume() {
      await write(ctx, async (scope) => {
        await scope.trx.updateTable('dispatch_state').set({ paused: 0, updated_at: now() }).where('id', '=', 1).execute();
        ctx.wake(scope, true);
      });
    },

    appendEvent(runId, type, data) {
      return write(ctx, async (scope) => recordEvent(scope, ctx, await requireRun(scope, ctx, runId), type, data));
    },

    appendProgress(runId, batch) {
      return write(ctx, async (scope) =>
        appendProgressInTransaction(scope, ctx, await requireRun(scope, ctx, runId), batch, runLog, store.dialect),
      );
    },

    async enqueueIn(scope, request) {
      for (;;) {
        // Null: the live run holding the key finished between the insert and the look-up; the
        // next try inserts (PostgreSQL's READ COMMITTED sees the finished run's commit).
        const result = await enqueueInTransaction(scope, ctx, request);
        if (result) return result;
      }
    },

    fireSchedule(name, slot, requests) {
      return write(ctx, async (scope) => {
        const fired = await scope.trx
          .insertInto('schedule_fires')
          .values({ name, slot, run_id: null, created_at: now() })
          .onConflict((oc) => oc.columns(['name', 'slot']).doNothing())
          .returning('name')
          .executeTakeFirst();
        if (!fired) return false;
        for (const request of requests) await enqueueInTransaction(scope, ctx, request);
        return true;
      });
    },

    on: signals.on,

    wake() {
      signals.emit('queue:wake');
    },

    async requestTeardown(runId, workspaceName) {
      await write(ctx, (scope) => scheduleTeardown(scope, ctx, { id: runId, workspaceName }, now()));
    },
  };
  return engine;
}
