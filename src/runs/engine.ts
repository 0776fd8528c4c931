import { sql } from 'kysely';
import { DURATION_GRACE_MS, type BudgetsConfig } from '../budgets/index.js';
import { createBudgetGate } from './budget-holds.js';
import { isSetupFailure, isTransientFailure, type RetryPolicy } from './retries.js';
import { BACKOFF, backoffDelay, consoleLogger, createEvents, type BackgroundLogger } from '../background/index.js';
import type { QueueConfig } from './config-section.js';
import { isUniqueViolation, type EffectScope, type PreparedStatement, type Store, type TransactionScope } from '../store/index.js';
import {
  earlierTokenHashes,
  forgetTokens,
  hashCallbackToken,
  matchesAnyHash,
  rememberReplacedToken,
  withTokenHistory,
} from './callback-tokens.js';
import { claimInOneTrip, claimInTransaction } from './claim.js';
import {
  createConversationOps,
  readConversation,
  readTranscript,
  storeTranscript,
  type Conversation,
  type Question,
} from './conversation.js';
import { enqueueInTransaction, queuedRunValues } from './enqueue.js';
import { IllegalTransitionError, LeaseLostError, TransitionError } from './errors.js';
import { createRunQueries } from './queries.js';
import { toRun, type RunPatch } from './rows.js';
import {
  canTransition,
  FINAL_EVENT,
  FINAL_STATUSES,
  isFinal,
  RUN_EVENT,
  LIVE_STATUSES,
  RUN_STATUS,
  type FinalStatus,
  type RunEventType,
} from './states.js';
import {
  appendProgressInTransaction,
  DEFAULT_RUN_LOG_MAX_BYTES,
  type ProgressAppended,
  type ProgressBatch,
  type RunLogLimits,
} from './run-log.js';
import { enqueueValues, preparePostgresStatements, toEnqueued, toWritten, type Written, type WrittenRow } from './postgres-statements.js';
import { prepareRunStatements, type RunStatements } from './run-statements.js';
import {
  announceWritten,
  hookActsOn,
  recordEvent,
  recordTransition,
  runHooks,
  scheduleTeardown,
  selectRun,
  type TransitionContext,
} from './transition.js';
import type { EnqueueResult, Run, RunEngine, RunOutcome, RunSignals, TaskRequest, TransitionHook } from './types.js';

/**
 * One NOTIFY channel for everything other replicas must hear: payload `wake` (new work may be
 * available; also implies new events) or `events` (new timeline events only, e.g. progress, or a
 * freed concurrency slot, which the replica that freed it fills: see `bringsWork`).
 */
export const NOTIFY_CHANNEL = 'baton';

/** Least time between two NOTIFYs that carry only `events` (see `hintReplicas`). */
const EVENTS_HINT_MS = 20;

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

export interface FullRunEngine extends RunEngine {
  /**
   * Enqueues inside the caller's transaction, so what else it writes (the inbox's verdict on the
   * delivery that asked for the run) commits or rolls back with the run.
   */
  enqueueIn(scope: TransactionScope, request: TaskRequest): Promise<EnqueueResult>;
  /** Records a cron slot and enqueues its runs in one transaction; false when the slot already fired. */
  fireSchedule(name: string, slot: number, requests: TaskRequest[]): Promise<boolean>;
  /**
   * Running runs past their duration limit plus `DURATION_GRACE_MS` end `timed_out` (runs claimed
   * without a recorded limit use `fallbackMs`, STALE_WORKSPACE_MINUTES). Returns them.
   */
  timeOutOverdueRuns(fallbackMs: number): Promise<Run[]>;
  /** When the earliest running run passes its limit plus the grace (epoch ms), or null. */
  nextDeadline(fallbackMs: number): Promise<number | null>;
  /** The run whose callback token this is, or null (constant-time comparison of hashes). */
  verifyCallbackToken(runId: number, token: string): Promise<Run | null>;
  /**
   * The run when `matches` accepts one of its callback token hashes (the current attempt's or an
   * adopted earlier one's): the forge gateway's capabilities are derived from them.
   */
  verifyByTokenHash(runId: number, matches: (hash: string) => boolean): Promise<Run | null>;
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
  /** The run's conversation (its question, reply, turns, earlier usage), or null when its agent never asked. */
  conversation(runId: number): Promise<Conversation | null>;
  /** Keeps the session transcript a runner uploaded (JSONL), gzip'd and bounded; returns the stored size. */
  storeTranscript(runId: number, jsonl: Buffer): Promise<number>;
  /** The kept transcript (JSONL), or null. */
  transcript(runId: number): Promise<Buffer | null>;
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

/** What a run that did not succeed records as its error. */
function failureReason(outcome: RunOutcome): string {
  return outcome.error ?? outcome.summary ?? `run ${outcome.status}`;
}

export { hashCallbackToken };

/**
 * The run engine: every change of a run is one transaction that checks the transition, writes the
 * run and its `run_events` row, lets the hooks add their rows (outbox), and registers what to
 * announce once it has committed (local listeners, dispatchers, other replicas). Reads go through
 * `createRunQueries`.
 */
export function createRunEngine(options: RunEngineOptions): FullRunEngine {
  const { store, queue } = options;
  const now = options.now ?? Date.now;
  const random = options.random ?? Math.random;
  const signals = createEvents<RunSignals>(options.logger ?? consoleLogger);
  const runLog = options.runLog ?? { maxBytes: DEFAULT_RUN_LOG_MAX_BYTES };
  const queries = createRunQueries({ store, concurrency: queue.concurrency });

  let pendingHint: 'wake' | 'events' | undefined;
  let sendingHint = false;
  let hintTimer: (() => void) | undefined;
  let lastHintAt = Number.NEGATIVE_INFINITY;
  /**
   * NOTIFY after commit, coalesced: one in flight at a time, carrying everything since the last.
   * NOTIFY inside a writing transaction holds PostgreSQL's global notify lock through the commit's
   * WAL flush, serialising every commit that notifies; a hint is only a hint (the dispatcher polls).
   * A `wake` (new work) goes at the end of this turn of the event loop (`setImmediate`), so the
   * commits answered in the same turn, and the effects of each (its events, then its wake-up),
   * send a single NOTIFY. `events` alone (live views, other replicas' outboxes) go at most once
   * every `EVENTS_HINT_MS`: at full speed a NOTIFY per transition cost a round trip per run.
   */
  function hintReplicas(kind: 'wake' | 'events'): void {
    if (store.dialect !== 'postgres') return;
    pendingHint = kind === 'wake' || pendingHint === 'wake' ? 'wake' : 'events';
    scheduleHint();
  }

  function scheduleHint(): void {
    if (sendingHint || !pendingHint) return;
    const wait = pendingHint === 'wake' ? 0 : Math.max(0, lastHintAt + EVENTS_HINT_MS - performance.now());
    // An `events` hint already waiting keeps its time; a `wake` replaces it.
    if (hintTimer && wait > 0) return;
    hintTimer?.();
    if (wait === 0) {
      const immediate = setImmediate(sendHint);
      hintTimer = () => clearImmediate(immediate);
    } else {
      const timer = setTimeout(sendHint, wait);
      timer.unref();
      hintTimer = () => clearTimeout(timer);
    }
  }

  function sendHint(): void {
    hintTimer = undefined;
    const payload = pendingHint;
    if (!payload) return;
    pendingHint = undefined;
    sendingHint = true;
    lastHintAt = performance.now();
    // A lost hint costs latency only: the other replicas' fallback polls find the change.
    void store
      .notify(store.db, NOTIFY_CHANNEL, payload)
      .catch(() => {})
      .finally(() => {
        sendingHint = false;
        scheduleHint();
      });
  }

  const gate = options.budgets ? createBudgetGate(options.budgets) : undefined;
  const ctx: TransitionContext & { defaultMaxAttempts: number; statements: RunStatements } = {
    now,
    statements: prepareRunStatements(store),
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

  const conversations = createConversationOps(ctx, store.dialect);
  const beforeClaim = gate && ((scope: TransactionScope) => gate.applyInClaim(scope, ctx));

  const write = <T>(fn: (scope: TransactionScope) => Promise<T>): Promise<T> => store.transaction((_trx, scope) => fn(scope));

  const statements = store.dialect === 'postgres' ? preparePostgresStatements(store) : undefined;
  /** Whether a transition recording an event of `type` needs a transaction for the hooks' writes. */
  const hooksWriteFor = (type: RunEventType) => ctx.hooks.some((hook) => hookActsOn(hook, type));

  /**
   * Runs a hot transition's single statement (postgres-statements.ts): on its own when no hook
   * has to write in its transaction, one round trip; otherwise inside a transaction, with the
   * hooks. `accept` reads its rows into the result and what was written, may throw (nothing was
   * written then), or returns undefined for a case the statement leaves alone: `slow` then does
   * it step by step, in the same transaction, or in a new one after the statement ran on its own.
   */
  async function writeStatement<R, T>(
    type: RunEventType,
    statement: PreparedStatement<R>,
    values: readonly unknown[],
    accept: (rows: R[]) => { result: T; written: Written[]; teardown?: boolean } | undefined,
    slow: (scope: TransactionScope) => Promise<T>,
  ): Promise<T> {
    const record = (scope: EffectScope, accepted: { result: T; written: Written[]; teardown?: boolean }): T => {
      announceWritten(scope, ctx, accepted.written);
      if (accepted.teardown) ctx.teardownQueued(scope);
      return accepted.result;
    };
    if (!hooksWriteFor(type)) {
      const done = await store.runStatement(statement, values, (rows, scope) => {
        const accepted = accept(rows);
        return accepted && { result: record(scope, accepted) };
      });
      return done ? done.result : write(slow);
    }
    return write(async (scope) => {
      const accepted = accept(await statement.execute(scope.trx, values));
      if (!accepted) return slow(scope);
      await runHooks(scope, ctx, accepted.written);
      return record(scope, accepted);
    });
  }

  const one = (rows: WrittenRow[]): Written | undefined => (rows[0] ? toWritten(rows[0]) : undefined);

  /**
   * Ends a run: `to` with the typed `patch`, its event, the teardown of its workspace, and the
   * follow-up run a duplicate asked for.
   */
  async function finish(
    scope: TransactionScope,
    run: Run,
    to: FinalStatus,
    patch: RunPatch,
    data: Record<string, unknown> | null,
    keepFollowup = true,
  ): Promise<Run> {
    // Checked before the write too, so the error names the run's state as it was read.
    if (!canTransition(run.status, to)) throw new IllegalTransitionError(run.id, run.status, to);
    const t = now();
    const row = await scope.trx
      .updateTable('runs')
      .set({ ...patch, status: to, lease_token: null, lease_expires_at: null, finished_at: t, updated_at: t })
      .where('id', '=', run.id)
      .returningAll()
      .executeTakeFirstOrThrow();
    const finished = toRun(row);
    await recordTransition(scope, ctx, finished, run.status, FINAL_EVENT[to], data);
    await scheduleTeardown(scope, ctx, finished, t);
    if (keepFollowup && run.followup) {
      const followupPayload = row.followup_payload ? (JSON.parse(row.followup_payload) as Run['payload']) : run.payload;
      await enqueueInTransaction(scope, ctx, {
        stage: run.stage,
        owner: run.owner,
        repo: run.repo,
        number: run.number ?? undefined,
        key: run.key,
        payload: { ...followupPayload, followupOf: run.id },
        maxAttempts: run.maxAttempts,
      });
    }
    return finished;
  }

  /** Back to the queue from provisioning (a failed attempt, an expired lease), due at `runAt`. */
  async function requeue(scope: TransactionScope, run: Run, runAt: number, lastError: string): Promise<Run> {
    const row = await scope.trx
      .updateTable('runs')
      .set({
        status: RUN_STATUS.queued,
        last_error: lastError,
        run_at: runAt,
        lease_token: null,
        lease_expires_at: null,
        updated_at: now(),
      })
      .where('id', '=', run.id)
      .returningAll()
      .executeTakeFirstOrThrow();
    return toRun(row);
  }

  /**
   * A transient failure with attempts left: back to the queue after a backoff, as the next attempt
   * of its agent, in a fresh workspace (the old one is torn down). The attempt's usage goes on its
   * `run:retrying` entry (and into the day's budgets), not on the run, which shows its last
   * attempt's; the issue hears nothing until the run's outcome.
   */
  async function retryAgent(scope: TransactionScope, run: Run, outcome: RunOutcome, of: number): Promise<Run> {
    const t = now();
    // Before the agent started (a clone the forge refused for now): the queue's pace, a few
    // seconds and doubling, since a forge restart or a freed disk is quick and no API's rate limit
    // is involved.
    const policy = isSetupFailure(outcome.error)
      ? { baseMs: options.queue.backoffBaseMs * 3, maxMs: options.queue.backoffMaxMs }
      : BACKOFF.agentRun;
    const delayMs = backoffDelay(policy, run.agentAttempt, random);
    const error = failureReason(outcome);
    const row = await scope.trx
      .updateTable('runs')
      .set({
        status: RUN_STATUS.queued,
        agent_attempt: run.agentAttempt + 1,
        // Provisioning attempts count per agent attempt.
        attempts: 0,
        run_at: t + delayMs,
        last_error: error,
        exit_code: outcome.exitCode ?? null,
        summary: outcome.summary ?? null,
        usage: null,
        cost_usd: null,
        cost_source: null,
        duration_ms: null,
        lease_token: null,
        lease_expires_at: null,
        workspace_name: null,
        workspace_id: null,
        callback_token_hash: null,
        claimed_at: null,
        started_at: null,
        updated_at: t,
      })
      .where('id', '=', run.id)
      .returningAll()
      .executeTakeFirstOrThrow();
    await scheduleTeardown(scope, ctx, run, t);
    const queued = toRun(row);
    await recordTransition(scope, ctx, queued, run.status, RUN_EVENT.retrying, {
      agent: true,
      error,
      ...(outcome.summary ? { summary: outcome.summary.slice(0, 2_000) } : {}),
      attempt: run.agentAttempt,
      attempts: of,
      delayMs,
      usage: outcome.usage ?? null,
      costUsd: outcome.costUsd ?? null,
    });
    return queued;
  }

  async function requireLease(scope: TransactionScope, runId: number, leaseToken: string): Promise<Run> {
    let query = scope.trx.selectFrom('runs').selectAll().where('id', '=', runId);
    if (store.dialect === 'postgres') query = query.forUpdate();
    const row = await query.executeTakeFirst();
    if (!row || row.status !== RUN_STATUS.provisioning || row.lease_token !== leaseToken) throw new LeaseLostError(runId);
    return toRun(row);
  }

  async function requireRun(scope: TransactionScope, runId: number): Promise<Run> {
    const run = await selectRun(scope.trx, runId, store.dialect);
    if (!run) throw new TransitionError(`run ${runId} does not exist`, 'not_found');
    return run;
  }

  async function cancelInTransaction(scope: TransactionScope, runId: number, reason = 'cancelled by operator'): Promise<Run> {
    const run = await requireRun(scope, runId);
    if (!canTransition(run.status, RUN_STATUS.cancelled)) {
      throw new TransitionError(`run ${runId} is already ${run.status}; only live runs can be cancelled`, 'conflict');
    }
    return finish(scope, run, RUN_STATUS.cancelled, { last_error: reason, followup: 0 }, { reason }, false);
  }

  /** failed | dead | timed_out | cancelled → queued, attempts reset. */
  async function retryInTransaction(scope: TransactionScope, run: Run): Promise<Run> {
    const runId = run.id;
    if (!isFinal(run.status) || !canTransition(run.status, RUN_STATUS.queued)) {
      throw new TransitionError(`run ${runId} is ${run.status}; only failed, dead, timed_out or cancelled runs can be retried`, 'conflict');
    }
    const t = now();
    const row = await scope.trx
      .updateTable('runs')
      .set({
        status: RUN_STATUS.queued,
        attempts: 0,
        agent_attempt: 1,
        run_at: t,
        finished_at: null,
        claimed_at: null,
        started_at: null,
        workspace_id: null,
        workspace_name: null,
        callback_token_hash: null,
        exit_code: null,
        summary: null,
        updated_at: t,
      })
      .where('id', '=', runId)
      .returningAll()
      .executeTakeFirstOrThrow();
    const queued = toRun(row);
    await forgetTokens(scope.trx, runId);
    await recordTransition(scope, ctx, queued, run.status, RUN_EVENT.requeued, { reason: 'retry requested' });
    return queued;
  }

  async function completeInTransaction(
    scope: TransactionScope,
    runId: number,
    outcome: RunOutcome,
  ): Promise<{ run: Run; changed: boolean }> {
    const run = await requireRun(scope, runId);
    if (isFinal(run.status)) return { run, changed: false };
    if (!canTransition(run.status, outcome.status)) {
      throw new TransitionError(`run ${runId} is ${run.status} and has no workspace to report from`, 'conflict');
    }
    const retries = options.retries;
    if (retries && outcome.status === RUN_STATUS.failed && isTransientFailure(outcome.error)) {
      const of = retries.attemptsFor(run.stage);
      if (run.agentAttempt < of) return { run: await retryAgent(scope, run, outcome, of), changed: true };
    }
    const lastError = outcome.status === 'succeeded' ? run.lastError : failureReason(outcome);
    const patch: RunPatch = {
      exit_code: outcome.exitCode ?? null,
      summary: outcome.summary ?? null,
      usage: outcome.usage ? JSON.stringify(outcome.usage) : null,
      cost_usd: outcome.costUsd ?? null,
      cost_source: outcome.costUsd !== null && outcome.costUsd !== undefined ? (outcome.costSource ?? 'reported') : null,
      duration_ms: outcome.durationMs ?? null,
      last_error: lastError,
    };
    const data = outcome.status === 'succeeded' ? null : { error: lastError };
    return { run: await finish(scope, run, outcome.status, patch, data), changed: true };
  }

  const engine: FullRunEngine = {
    ...queries,

    async enqueue(request) {
      for (;;) {
        const slow = (scope: TransactionScope) => enqueueInTransaction(scope, ctx, request);
        let result: EnqueueResult | null;
        if (statements) {
          const values = queuedRunValues(ctx, request);
          result = await writeStatement(
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
          result = await write(slow);
        }
        if (result) return result;
      }
    },

    claim(max = Number.MAX_SAFE_INTEGER) {
      // Nothing to run under the lock and nothing for hooks to write: one round trip.
      if (statements && !hooksWriteFor(RUN_EVENT.claimed) && !beforeClaim && queue.perRepositoryConcurrency === 0) {
        return claimInOneTrip(store, ctx, statements, queue, max);
      }
      return write((scope) => claimInTransaction(scope, store.dialect, ctx, queue, max, statements, beforeClaim));
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
      return write(async (scope) => {
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
      });
    },

    markRunning(runId, leaseToken, details) {
      if (statements) {
        return writeStatement(
          RUN_EVENT.started,
          statements.markRunning,
          [runId, leaseToken, details.workspaceId, now()],
          (rows) => {
            const written = one(rows);
            if (!written) throw new LeaseLostError(runId);
            return { result: written.run, written: [written] };
          },
          () => Promise.reject(new LeaseLostError(runId)),
        );
      }
      return write(async (scope) => {
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
      return write(async (scope) => {
        const run = await requireLease(scope, runId, leaseToken);
        if (opts.permanent) return finish(scope, run, RUN_STATUS.failed, { last_error: error }, { error });
        // A full disk or a lack of descriptors passes: the run waits it out (backing off up to
        // backoffMaxMs) instead of dying of it; its timeline says why it waits.
        if (run.attempts >= run.maxAttempts && !opts.transient) {
          return finish(scope, run, RUN_STATUS.dead, { last_error: error }, { error, attempts: run.attempts });
        }
        const delayMs = backoffDelay({ baseMs: queue.backoffBaseMs, maxMs: queue.backoffMaxMs }, run.attempts, random);
        const queued = await requeue(scope, run, now() + delayMs, error);
        await recordTransition(scope, ctx, queued, run.status, RUN_EVENT.retrying, {
          error,
          attempt: run.attempts,
          delayMs,
          ...(opts.transient ? { transient: opts.transient } : {}),
        });
        return queued;
      });
    },

    complete(runId, outcome: RunOutcome) {
      // A transient failure may be retried: decided step by step, knowing the run's stage and attempt.
      const mayRetry = options.retries !== undefined && outcome.status === RUN_STATUS.failed && isTransientFailure(outcome.error);
      const statement = mayRetry ? undefined : statements?.complete[outcome.status];
      if (!statement) return write((scope) => completeInTransaction(scope, runId, outcome));
      const lastError = outcome.status === 'succeeded' ? null : failureReason(outcome);
      const values = [
        runId,
        outcome.status,
        outcome.exitCode ?? null,
        outcome.summary ?? null,
        outcome.usage ? JSON.stringify(outcome.usage) : null,
        outcome.costUsd ?? null,
        outcome.durationMs ?? null,
        lastError,
        now(),
        FINAL_EVENT[outcome.status],
        lastError === null ? null : JSON.stringify({ error: lastError }),
        outcome.costUsd !== null && outcome.costUsd !== undefined ? (outcome.costSource ?? 'reported') : null,
      ];
      return writeStatement(
        FINAL_EVENT[outcome.status],
        statement,
        values,
        (rows) => {
          const row = rows[0];
          // Not a live run without a follow-up (or no run at all): the step-by-step path decides.
          if (!row?.run || !row.event) return undefined;
          const written = toWritten({ run: row.run, event: row.event });
          return { result: { run: written.run, changed: true }, written: [written], teardown: written.run.workspaceName !== null };
        },
        (scope) => completeInTransaction(scope, runId, outcome),
      );
    },

    cancel(runId, reason = 'cancelled by operator') {
      return write((scope) => cancelInTransaction(scope, runId, reason));
    },

    cancelIn: cancelInTransaction,

    park(runId, question, outcome) {
      return write(async (scope) => conversations.park(scope, await requireRun(scope, runId), question, outcome));
    },
    resumeIn: (scope, runId, reply) => conversations.resumeIn(scope, runId, reply),
    expireWaiting(waitMs) {
      return write((scope) => conversations.expireIn(scope, now() - waitMs));
    },
    conversation: (runId) => readConversation(store.db, runId),
    storeTranscript: (runId, jsonl) => storeTranscript(store.db, runId, jsonl, now()),
    transcript: (runId) => readTranscript(store.db, runId),

    async retryIn(scope, runId) {
      const run = await requireRun(scope, runId);
      // Checked first: a unique violation would abort the caller's whole transaction on PostgreSQL.
      const live = await scope.trx
        .selectFrom('runs')
        .select('id')
        .where('key', '=', run.key)
        .where('status', 'in', [...LIVE_STATUSES])
        .executeTakeFirst();
      if (live)
        throw new TransitionError(`run ${runId} cannot be retried: run ${live.id} for the same stage and issue is live`, 'conflict');
      return retryInTransaction(scope, run);
    },

    async retry(runId) {
      try {
        return await write(async (scope) => retryInTransaction(scope, await requireRun(scope, runId)));
      } catch (err) {
        if (isUniqueViolation(err)) {
          throw new TransitionError(`run ${runId} cannot be retried: another run for the same stage and issue is live`, 'conflict', {
            cause: err,
          });
        }
        throw err;
      }
    },

    async pause() {
      await store.db.updateTable('dispatch_state').set({ paused: 1, updated_at: now() }).where('id', '=', 1).execute();
    },

    async resume() {
      await write(async (scope) => {
        await scope.trx.updateTable('dispatch_state').set({ paused: 0, updated_at: now() }).where('id', '=', 1).execute();
        ctx.wake(scope, true);
      });
    },

    appendEvent(runId, type, data) {
      return write(async (scope) => recordEvent(scope, ctx, await requireRun(scope, runId), type, data));
    },

    appendProgress(runId, batch) {
      return write(async (scope) => appendProgressInTransaction(scope, ctx, await requireRun(scope, runId), batch, runLog, store.dialect));
    },

    reclaimExpiredLeases() {
      return write(async (scope) => {
        const t = now();
        let expired = scope.trx
          .selectFrom('runs')
          .selectAll()
          .where('status', '=', RUN_STATUS.provisioning)
          .where('lease_expires_at', '<', t);
        // Another sweeper (this replica's or another's) may be at the same rows: skip what it holds.
        if (store.dialect === 'postgres') expired = expired.forUpdate().skipLocked();
        const rows = await expired.execute();
        const reason = 'lease expired while provisioning';
        for (const row of rows) {
          const run = toRun(row);
          if (run.attempts >= run.maxAttempts) {
            await finish(scope, run, RUN_STATUS.dead, { last_error: reason }, { error: reason });
            continue;
          }
          const queued = await requeue(scope, run, t, reason);
          await recordTransition(scope, ctx, queued, run.status, RUN_EVENT.requeued, { reason: 'lease expired' });
        }
        return rows.length;
      });
    },

    timeOutOverdueRuns(fallbackMs) {
      return write(async (scope) => {
        const t = now();
        let overdue = scope.trx
          .selectFrom('runs')
          .selectAll()
          .where('status', '=', RUN_STATUS.running)
          .where(sql<number>`started_at + coalesce(max_duration_ms, ${fallbackMs}) + ${DURATION_GRACE_MS}`, '<', t);
        if (store.dialect === 'postgres') overdue = overdue.forUpdate().skipLocked();
        const rows = await overdue.execute();
        const timedOut: Run[] = [];
        for (const row of rows) {
          const limit = formatMinutes(row.max_duration_ms ?? fallbackMs);
          const reason =
            row.max_duration_ms === null
              ? `no completion callback within ${limit} (STALE_WORKSPACE_MINUTES)`
              : `no completion callback within the run's ${limit} duration limit`;
          timedOut.push(
            await finish(scope, toRun(row), RUN_STATUS.timedOut, { last_error: reason }, { error: reason, limit: 'max_duration' }),
          );
        }
        return timedOut;
      });
    },

    async nextDeadline(fallbackMs) {
      const row = await store.db
        .selectFrom('runs')
        .select(sql<number | null>`min(started_at + coalesce(max_duration_ms, ${fallbackMs}))`.as('at'))
        .where('status', '=', RUN_STATUS.running)
        .executeTakeFirst();
      return row?.at === null || row?.at === undefined ? null : Number(row.at) + DURATION_GRACE_MS;
    },

    async prune() {
      const cutoff = now() - queue.retentionDays * 24 * 60 * 60_000;
      return store.transaction(async (trx) => {
        const old = trx.selectFrom('runs').select('id').where('status', 'in', FINAL_STATUSES).where('finished_at', '<', cutoff);
        await trx.deleteFrom('run_events').where('run_id', 'in', old).execute();
        await withTokenHistory(trx).deleteFrom('callback_token_history').where('run_id', 'in', old).execute();
        await trx.deleteFrom('teardowns').where('status', '!=', 'pending').where('updated_at', '<', cutoff).execute();
        await trx.deleteFrom('schedule_fires').where('created_at', '<', cutoff).execute();
        const result = await trx
          .deleteFrom('runs')
          .where('status', 'in', FINAL_STATUSES)
          .where('finished_at', '<', cutoff)
          .executeTakeFirst();
        return Number(result.numDeletedRows);
      });
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
      return write(async (scope) => {
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

    async verifyCallbackToken(runId, token) {
      const row = await store.db.selectFrom('runs').selectAll().where('id', '=', runId).executeTakeFirst();
      if (!row?.callback_token_hash) return null;
      // The current attempt's token, or one an earlier attempt gave a workspace this run adopted.
      const hashes = [row.callback_token_hash, ...(await earlierTokenHashes(store.db, runId))];
      return matchesAnyHash(token, hashes) ? toRun(row) : null;
    },

    async verifyByTokenHash(runId, matches) {
      const row = await store.db.selectFrom('runs').selectAll().where('id', '=', runId).executeTakeFirst();
      if (!row?.callback_token_hash) return null;
      const hashes = [row.callback_token_hash, ...(await earlierTokenHashes(store.db, runId))];
      // Every hash is tried (no early exit): the time taken says nothing about which matched.
      let found = false;
      for (const hash of hashes) found = matches(hash) || found;
      return found ? toRun(row) : null;
    },

    on: signals.on,

    wake() {
      signals.emit('queue:wake');
    },

    async requestTeardown(runId, workspaceName) {
      await write((scope) => scheduleTeardown(scope, ctx, { id: runId, workspaceName }, now()));
    },
  };
  return engine;
}

/** `90 minutes`, `1.5 minutes`: a limit as the timeline and the issue comment say it. */
function formatMinutes(ms: number): string {
  const minutes = Math.round((ms / 60_000) * 100) / 100;
  return `${minutes} minute${minutes === 1 ? '' : 's'}`;
}
