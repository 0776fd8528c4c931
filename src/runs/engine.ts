import { createHash, timingSafeEqual } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { Kysely } from 'kysely';
import type { QueueConfig } from '../config/index.js';
import { isUniqueViolation, type Database, type Store } from '../store/index.js';
import { backoffDelay } from './backoff.js';
import { claimInTransaction } from './claim.js';
import { enqueueInTransaction } from './enqueue.js';
import { toRun, toRunEvent } from './rows.js';
import { FINAL_STATUSES, isFinal, LIVE_STATUSES, type RunStatus } from './states.js';
import {
  appendProgressInTransaction,
  DEFAULT_RUN_LOG_MAX_BYTES,
  type ProgressAppended,
  type ProgressBatch,
  type RunLogLimits,
} from './run-log.js';
import { recordEvent, scheduleTeardown, selectRun, type Committed, type TransitionContext } from './transition.js';
import {
  TransitionError,
  type EnqueueResult,
  type QueueStats,
  type Run,
  type RunEngine,
  type RunEvent,
  type RunFilter,
  type RunOutcome,
  type TaskRequest,
  type TransitionHook,
} from './types.js';

/** The run's lease was lost (expired and re-claimed, or the run was cancelled): stop working on it. */
export class LeaseLostError extends Error {
  constructor(runId: number) {
    super(`run ${runId} is no longer held by this claim`);
    this.name = 'LeaseLostError';
  }
}

/**
 * One NOTIFY channel for everything other replicas must hear: payload `wake` (work or capacity may
 * be available; also implies new events) or `events` (new timeline events only, e.g. progress).
 */
export const NOTIFY_CHANNEL = 'baton';

export interface RunEngineOptions {
  store: Store;
  queue: QueueConfig;
  /** Injectable clock (tests drive backoff and cron with it). @default Date.now */
  now?: () => number;
  random?: () => number;
  /** Called inside each event's transaction (the outbox writes its rows here). */
  hooks?: TransitionHook[];
  /** How much of each run's log the database keeps. @default { maxBytes: DEFAULT_RUN_LOG_MAX_BYTES } */
  runLog?: RunLogLimits;
}

export interface FullRunEngine extends RunEngine {
  /** Records a cron slot and enqueues its runs in one transaction; false when the slot already fired. */
  fireSchedule(name: string, slot: number, requests: TaskRequest[]): Promise<boolean>;
  /** Running runs started before `startedBefore` end `timed_out`. Returns them. */
  timeOutStaleRuns(startedBefore: number, reason: string): Promise<Run[]>;
  /** The run whose callback token this is, or null (constant-time comparison of hashes). */
  verifyCallbackToken(runId: number, token: string): Promise<Run | null>;
  /** When the earliest queued run becomes due (epoch ms), or null when none is queued. */
  nextRunAt(): Promise<number | null>;
  /** Live runs (queued, provisioning, running), oldest first. */
  listLive(): Promise<Run[]>;
  /** Adds a hook after construction (modules wired later in createApp). */
  addHook(hook: TransitionHook): void;
  /** Wakes local listeners (dispatcher) without a database change. */
  wake(): void;
  /** Queues removal of a workspace that outlived its claim (created after the run was cancelled). */
  requestTeardown(runId: number | null, workspaceName: string): Promise<void>;
  /** Appends a log batch from the workspace, keeping the run's stored log within `runLog` (see run-log.ts). */
  appendProgress(runId: number, batch: ProgressBatch): Promise<ProgressAppended>;
}

export function hashCallbackToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

export function createRunEngine(options: RunEngineOptions): FullRunEngine {
  const { store, queue } = options;
  const now = options.now ?? Date.now;
  const random = options.random ?? Math.random;
  const hooks: TransitionHook[] = [...(options.hooks ?? [])];
  const ctx: TransitionContext & { defaultMaxAttempts: number } = { now, hooks, defaultMaxAttempts: queue.maxAttempts };
  const runLog = options.runLog ?? { maxBytes: DEFAULT_RUN_LOG_MAX_BYTES };
  const emitter = new EventEmitter();
  emitter.setMaxListeners(0);

  /** Runs `fn` in a transaction and announces its events once it has committed. */
  async function write<T>(fn: (trx: Kysely<Database>, committed: Committed) => Promise<T>, wake = false): Promise<T> {
    const committed: Committed = [];
    const result = await store.transaction((trx) => fn(trx, committed));
    if (wake || committed.length > 0) hintReplicas(wake ? 'wake' : 'events');
    for (const { event, run } of committed) safeEmit('event', event, run);
    if (wake) safeEmit('wake');
    return result;
  }

  let pendingHint: 'wake' | 'events' | undefined;
  let hinting = false;
  /**
   * NOTIFY after commit, coalesced: one in flight at a time, carrying everything since the last.
   * NOTIFY inside a writing transaction holds PostgreSQL's global notify lock through the commit's
   * WAL flush, serialising every commit that notifies; a hint is only a hint (the dispatcher polls).
   */
  function hintReplicas(kind: 'wake' | 'events'): void {
    pendingHint = kind === 'wake' || pendingHint === 'wake' ? 'wake' : 'events';
    if (hinting || store.dialect !== 'postgres') return;
    hinting = true;
    void (async () => {
      while (pendingHint) {
        const payload = pendingHint;
        pendingHint = undefined;
        await store.notify(store.db, NOTIFY_CHANNEL, payload).catch(() => {});
      }
      hinting = false;
    })();
  }

  /** Listeners must never break the caller's transition (graphile-worker's safeEmit). */
  function safeEmit(name: string, ...args: unknown[]): void {
    for (const listener of emitter.listeners(name)) {
      try {
        (listener as (...a: unknown[]) => void)(...args);
      } catch {
        // A broken listener is its own problem; the transition already committed.
      }
    }
  }

  async function finish(
    trx: Kysely<Database>,
    committed: Committed,
    run: Run,
    to: RunStatus,
    patch: Record<string, unknown>,
    data: Record<string, unknown> | null,
    keepFollowup = true,
  ): Promise<Run> {
    const t = now();
    const row = await trx
      .updateTable('runs')
      .set({ ...patch, status: to, lease_token: null, lease_expires_at: null, finished_at: t, updated_at: t })
      .where('id', '=', run.id)
      .returningAll()
      .executeTakeFirstOrThrow();
    const finished = toRun(row);
    await recordEvent(trx, ctx, committed, finished, `run:${to}`, { from: run.status }, data);
    await scheduleTeardown(trx, finished, t);
    if (keepFollowup && run.followup) {
      const followupPayload = row.followup_payload ? (JSON.parse(row.followup_payload) as Run['payload']) : run.payload;
      await enqueueInTransaction(trx, ctx, committed, {
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

  async function requireLease(trx: Kysely<Database>, runId: number, leaseToken: string): Promise<Run> {
    let query = trx.selectFrom('runs').selectAll().where('id', '=', runId);
    if (store.dialect === 'postgres') query = query.forUpdate();
    const row = await query.executeTakeFirst();
    if (!row || row.status !== 'provisioning' || row.lease_token !== leaseToken) throw new LeaseLostError(runId);
    return toRun(row);
  }

  async function requireRun(trx: Kysely<Database>, runId: number): Promise<Run> {
    const run = await selectRun(trx, runId, store.dialect);
    if (!run) throw new TransitionError(`run ${runId} does not exist`, 'not_found');
    return run;
  }

  const engine: FullRunEngine = {
    async enqueue(request) {
      for (;;) {
        const result = await write((trx, committed) => enqueueInTransaction(trx, ctx, committed, request), true);
        if (result) return result as EnqueueResult;
      }
    },

    claim(max = Number.MAX_SAFE_INTEGER) {
      return write((trx, committed) => claimInTransaction(trx, store.dialect, ctx, committed, queue, max));
    },

    async heartbeat(runId, leaseToken) {
      const t = now();
      const result = await store.db
        .updateTable('runs')
        .set({ lease_expires_at: t + queue.leaseMs, updated_at: t })
        .where('id', '=', runId)
        .where('status', '=', 'provisioning')
        .where('lease_token', '=', leaseToken)
        .executeTakeFirst();
      return Number(result.numUpdatedRows) === 1;
    },

    async recordWorkspace(runId, leaseToken, details) {
      const result = await store.db
        .updateTable('runs')
        .set({ workspace_name: details.workspaceName, callback_token_hash: details.callbackTokenHash, updated_at: now() })
        .where('id', '=', runId)
        .where('status', '=', 'provisioning')
        .where('lease_token', '=', leaseToken)
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) !== 1) throw new LeaseLostError(runId);
    },

    markRunning(runId, leaseToken, details) {
      return write(async (trx, committed) => {
        const t = now();
        // The lease check is the UPDATE's own condition: one round trip instead of lock-then-write.
        const row = await trx
          .updateTable('runs')
          .set({
            status: 'running',
            workspace_id: details.workspaceId,
            lease_token: null,
            lease_expires_at: null,
            started_at: t,
            updated_at: t,
          })
          .where('id', '=', runId)
          .where('status', '=', 'provisioning')
          .where('lease_token', '=', leaseToken)
          .returningAll()
          .executeTakeFirst();
        if (!row) throw new LeaseLostError(runId);
        const started = toRun(row);
        await recordEvent(trx, ctx, committed, started, 'run:started', { from: 'provisioning' }, { workspace: started.workspaceName });
        return started;
      });
    },

    failAttempt(runId, leaseToken, error, opts = {}) {
      return write(async (trx, committed) => {
        const run = await requireLease(trx, runId, leaseToken);
        if (opts.permanent) return finish(trx, committed, run, 'failed', { last_error: error }, { error });
        if (run.attempts >= run.maxAttempts) {
          return finish(trx, committed, run, 'dead', { last_error: error }, { error, attempts: run.attempts });
        }
        const delayMs = backoffDelay(run.attempts, queue.backoffBaseMs, queue.backoffMaxMs, random);
        const t = now();
        const row = await trx
          .updateTable('runs')
          .set({ status: 'queued', last_error: error, run_at: t + delayMs, lease_token: null, lease_expires_at: null, updated_at: t })
          .where('id', '=', runId)
          .returningAll()
          .executeTakeFirstOrThrow();
        const queued = toRun(row);
        await recordEvent(trx, ctx, committed, queued, 'run:retrying', { from: run.status }, { error, attempt: run.attempts, delayMs });
        return queued;
      }, true);
    },

    complete(runId, outcome: RunOutcome) {
      return write(async (trx, committed) => {
        const run = await requireRun(trx, runId);
        if (isFinal(run.status)) return { run, changed: false };
        if (run.status === 'queued') throw new TransitionError(`run ${runId} is queued and has no workspace to report from`, 'conflict');
        const patch = {
          exit_code: outcome.exitCode ?? null,
          summary: outcome.summary ?? null,
          usage: outcome.usage ? JSON.stringify(outcome.usage) : null,
          cost_usd: outcome.costUsd ?? null,
          duration_ms: outcome.durationMs ?? null,
          last_error: outcome.status === 'succeeded' ? run.lastError : (outcome.error ?? outcome.summary ?? `run ${outcome.status}`),
        };
        const data = outcome.status === 'succeeded' ? null : { error: patch.last_error };
        return { run: await finish(trx, committed, run, outcome.status, patch, data), changed: true };
      }, true);
    },

    cancel(runId, reason = 'cancelled by operator') {
      return write(async (trx, committed) => {
        const run = await requireRun(trx, runId);
        if (isFinal(run.status))
          throw new TransitionError(`run ${runId} is already ${run.status}; only live runs can be cancelled`, 'conflict');
        return finish(trx, committed, run, 'cancelled', { last_error: reason, followup: 0 }, { reason }, false);
      }, true);
    },

    async retry(runId) {
      try {
        return await write(async (trx, committed) => {
          const run = await requireRun(trx, runId);
          if (!isFinal(run.status) || run.status === 'succeeded') {
            throw new TransitionError(
              `run ${runId} is ${run.status}; only failed, dead, timed_out or cancelled runs can be retried`,
              'conflict',
            );
          }
          const t = now();
          const row = await trx
            .updateTable('runs')
            .set({
              status: 'queued',
              attempts: 0,
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
          await recordEvent(trx, ctx, committed, queued, 'run:requeued', { from: run.status }, { reason: 'retry requested' });
          return queued;
        }, true);
      } catch (err) {
        if (isUniqueViolation(err)) {
          throw new TransitionError(`run ${runId} cannot be retried: another run for the same stage and issue is live`, 'conflict');
        }
        throw err;
      }
    },

    async pause() {
      await store.db.updateTable('dispatch_state').set({ paused: 1, updated_at: now() }).where('id', '=', 1).execute();
    },

    async resume() {
      await write(async (trx) => {
        await trx.updateTable('dispatch_state').set({ paused: 0, updated_at: now() }).where('id', '=', 1).execute();
      }, true);
    },

    async isPaused() {
      const row = await store.db.selectFrom('dispatch_state').select('paused').where('id', '=', 1).executeTakeFirst();
      return row?.paused === 1;
    },

    appendProgress(runId, batch) {
      return write(async (trx, committed) => {
        const run = await requireRun(trx, runId);
        return appendProgressInTransaction(trx, ctx, committed, run, batch, runLog, store.dialect);
      });
    },

    appendEvent(runId, type, data) {
      return write(async (trx, committed) => {
        const run = await requireRun(trx, runId);
        return recordEvent(trx, ctx, committed, run, type, null, data);
      });
    },

    get(runId) {
      return selectRun(store.db, runId);
    },

    async findByWorkspace(workspaceName) {
      const row = await store.db
        .selectFrom('runs')
        .selectAll()
        .where('workspace_name', '=', workspaceName)
        .orderBy('id', 'desc')
        .limit(1)
        .executeTakeFirst();
      return row ? toRun(row) : null;
    },

    async list(filter: RunFilter = {}) {
      let query = store.db.selectFrom('runs').selectAll();
      if (filter.status) query = query.where('status', 'in', Array.isArray(filter.status) ? filter.status : [filter.status]);
      if (filter.stage) query = query.where('stage', '=', filter.stage);
      if (filter.owner) query = query.where('owner', '=', filter.owner);
      if (filter.repo) query = query.where('repo', '=', filter.repo);
      if (filter.number !== undefined) query = query.where('number', '=', filter.number);
      if (filter.beforeId !== undefined) query = query.where('id', '<', filter.beforeId);
      const rows = await query
        .orderBy('id', 'desc')
        .limit(Math.min(filter.limit ?? 50, 500))
        .execute();
      return rows.map(toRun);
    },

    async nextRunAt() {
      const row = await store.db
        .selectFrom('runs')
        .select(({ fn }) => fn.min('run_at').as('at'))
        .where('status', '=', 'queued')
        .executeTakeFirst();
      return row?.at === null || row?.at === undefined ? null : Number(row.at);
    },

    async listLive() {
      const rows = await store.db.selectFrom('runs').selectAll().where('status', 'in', LIVE_STATUSES).orderBy('id').execute();
      return rows.map(toRun);
    },

    async events(runId) {
      const rows = await store.db.selectFrom('run_events').selectAll().where('run_id', '=', runId).orderBy('id').execute();
      return rows.map(toRunEvent);
    },

    async eventsSince(afterId, limit = 1000) {
      const rows = await store.db.selectFrom('run_events').selectAll().where('id', '>', afterId).orderBy('id').limit(limit).execute();
      return rows.map(toRunEvent);
    },

    async stats(): Promise<QueueStats> {
      const rows = await store.db
        .selectFrom('runs')
        .select(['status', ({ fn }) => fn.countAll<number>().as('n')])
        .where('status', 'in', ['queued', 'provisioning', 'running', 'dead', 'failed'])
        .groupBy('status')
        .execute();
      const count = (status: string) => Number(rows.find((r) => r.status === status)?.n ?? 0);
      return {
        queued: count('queued'),
        provisioning: count('provisioning'),
        running: count('running'),
        dead: count('dead'),
        failed: count('failed'),
        paused: await engine.isPaused(),
        concurrency: queue.concurrency,
      };
    },

    reclaimExpiredLeases() {
      return write(async (trx, committed) => {
        const t = now();
        let expired = trx.selectFrom('runs').selectAll().where('status', '=', 'provisioning').where('lease_expires_at', '<', t);
        // Another sweeper (this replica's or another's) may be at the same rows: skip what it holds.
        if (store.dialect === 'postgres') expired = expired.forUpdate().skipLocked();
        const rows = await expired.execute();
        for (const row of rows) {
          const run = toRun(row);
          if (run.attempts >= run.maxAttempts) {
            await finish(
              trx,
              committed,
              run,
              'dead',
              { last_error: 'lease expired while provisioning' },
              { error: 'lease expired while provisioning' },
            );
            continue;
          }
          const updated = await trx
            .updateTable('runs')
            .set({
              status: 'queued',
              lease_token: null,
              lease_expires_at: null,
              run_at: t,
              updated_at: t,
              last_error: 'lease expired while provisioning',
            })
            .where('id', '=', run.id)
            .returningAll()
            .executeTakeFirstOrThrow();
          await recordEvent(trx, ctx, committed, toRun(updated), 'run:requeued', { from: 'provisioning' }, { reason: 'lease expired' });
        }
        return rows.length;
      }, true);
    },

    timeOutStaleRuns(startedBefore, reason) {
      return write(async (trx, committed) => {
        let stale = trx.selectFrom('runs').selectAll().where('status', '=', 'running').where('started_at', '<', startedBefore);
        if (store.dialect === 'postgres') stale = stale.forUpdate().skipLocked();
        const rows = await stale.execute();
        const timedOut: Run[] = [];
        for (const row of rows) {
          timedOut.push(await finish(trx, committed, toRun(row), 'timed_out', { last_error: reason }, { error: reason }));
        }
        return timedOut;
      }, true);
    },

    async prune() {
      const cutoff = now() - queue.retentionDays * 24 * 60 * 60_000;
      return store.transaction(async (trx) => {
        const old = trx.selectFrom('runs').select('id').where('status', 'in', FINAL_STATUSES).where('finished_at', '<', cutoff);
        await trx.deleteFrom('run_events').where('run_id', 'in', old).execute();
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

    fireSchedule(name, slot, requests) {
      return write(async (trx, committed) => {
        const fired = await trx
          .insertInto('schedule_fires')
          .values({ name, slot, run_id: null, created_at: now() })
          .onConflict((oc) => oc.columns(['name', 'slot']).doNothing())
          .returning('name')
          .executeTakeFirst();
        if (!fired) return false;
        for (const request of requests) await enqueueInTransaction(trx, ctx, committed, request);
        return true;
      }, true);
    },

    async verifyCallbackToken(runId, token) {
      const row = await store.db.selectFrom('runs').selectAll().where('id', '=', runId).executeTakeFirst();
      if (!row?.callback_token_hash) return null;
      const expected = Buffer.from(row.callback_token_hash, 'hex');
      const actual = Buffer.from(hashCallbackToken(token), 'hex');
      return expected.length === actual.length && timingSafeEqual(expected, actual) ? toRun(row) : null;
    },

    subscribe(listener: (event: RunEvent, run: Run) => void) {
      emitter.on('event', listener);
      return () => emitter.off('event', listener);
    },

    onWake(listener) {
      emitter.on('wake', listener);
      return () => emitter.off('wake', listener);
    },

    addHook(hook) {
      hooks.push(hook);
    },

    wake() {
      safeEmit('wake');
    },

    async requestTeardown(runId, workspaceName) {
      await store.transaction((trx) => scheduleTeardown(trx, { id: runId, workspaceName }, now()));
    },
  };
  return engine;
}
