import { randomUUID } from 'node:crypto';
import { backoffDelay, createLoop, errorMessage, settleWithin } from '../background/index.js';
import type { CleanupConfig } from './config-section.js';
import type { Logger } from '../log/index.js';
import type { Store } from '../store/index.js';
import { teardownWorkspace, type WorkspaceProvider } from '../workspaces/index.js';
import type { RunEngine } from './types.js';

export interface TeardownWorkerOptions {
  store: Store;
  provider: WorkspaceProvider;
  cleanup: CleanupConfig;
  logger: Logger;
  /** Whose `teardown:queued` signal wakes the worker as soon as a run's end has committed. */
  engine?: Pick<RunEngine, 'on'>;
  /** @default stop → wait → delete → confirm gone (workspaces' teardownWorkspace) */
  teardown?: (provider: WorkspaceProvider, name: string) => Promise<unknown>;
  /**
   * Lease on a teardown job, renewed every third of it while the job runs: a teardown may take
   * minutes (a slow Coder stop), a crashed replica's job is picked up about one lease later.
   * @default cleanup.leaseMs
   */
  leaseMs?: number;
  /** Fallback poll for teardowns queued by other replicas. @default 5_000 */
  pollMs?: number;
  /** How long `stop()` waits for teardowns in flight before leaving them to their lease. @default 10_000 */
  stopWaitMs?: number;
  now?: () => number;
  random?: () => number;
}

export interface TeardownWorker {
  start(): void;
  /** Stops claiming; waits for teardowns in flight at most `stopWaitMs`. */
  stop(): Promise<void>;
  wake(): void;
  /** Runs every due job now and waits for them (tests). */
  drain(): Promise<number>;
}

/**
 * Tears workspaces down as jobs of their own: retried with backoff, `cleanup.concurrency` at a
 * time, never touching the run's recorded outcome.
 */
export function createTeardownWorker(options: TeardownWorkerOptions): TeardownWorker {
  const { store, provider, cleanup, logger } = options;
  const now = options.now ?? Date.now;
  const leaseMs = options.leaseMs ?? cleanup.leaseMs;
  const teardown = options.teardown ?? ((p: WorkspaceProvider, name: string) => teardownWorkspace(p, name, { pollMs: 1_000 }));
  const active = new Set<Promise<void>>();
  /** Lease renewals of the jobs in flight; stopped when the worker stops, leaving them to their lease. */
  const renewals = new Set<() => void>();
  let unsubscribe: (() => void) | undefined;
  let stopping: Promise<void> | undefined;
  const loop = createLoop({
    name: 'teardown worker',
    logger,
    pollMs: options.pollMs ?? 5_000,
    async step() {
      await fill();
    },
  });

  async function claimDue(limit: number): Promise<Array<{ id: number; workspace_name: string; attempts: number; lease: string }>> {
    const t = now();
    const lease = randomUUID();
    return store.transaction(async (trx) => {
      let due = trx
        .selectFrom('teardowns')
        .select(['id', 'workspace_name', 'attempts'])
        .where('status', '=', 'pending')
        .where('next_attempt_at', '<=', t)
        .where((eb) => eb.or([eb('lease_expires_at', 'is', null), eb('lease_expires_at', '<', t)]))
        .orderBy('next_attempt_at')
        .limit(limit);
      if (store.dialect === 'postgres') due = due.forUpdate().skipLocked();
      const rows = await due.execute();
      if (rows.length === 0) return [];
      await trx
        .updateTable('teardowns')
        .set({ lease_token: lease, lease_expires_at: t + leaseMs, updated_at: t })
        .where(
          'id',
          'in',
          rows.map((r) => r.id),
        )
        .execute();
      return rows.map((r) => ({ ...r, lease }));
    });
  }

  /** Keeps the job's lease while it runs; a renewal that finds the lease gone is logged, not fatal. */
  function holdLease(job: { id: number; lease: string }, log: Logger): () => void {
    const timer = setInterval(
      () => {
        store.db
          .updateTable('teardowns')
          .set({ lease_expires_at: now() + leaseMs, updated_at: now() })
          .where('id', '=', job.id)
          .where('lease_token', '=', job.lease)
          .executeTakeFirst()
          .then(
            (result) => Number(result.numUpdatedRows) === 1 || log.warn('teardown lease lost; another worker may run it too'),
            (err: unknown) => log.warn({ error: errorMessage(err) }, 'teardown lease renewal failed'),
          );
      },
      Math.max(50, Math.floor(leaseMs / 3)),
    );
    const release = () => {
      clearInterval(timer);
      renewals.delete(release);
    };
    renewals.add(release);
    return release;
  }

  async function runJob(job: { id: number; workspace_name: string; attempts: number; lease: string }): Promise<void> {
    const log = logger.child({ workspace: job.workspace_name, teardownId: job.id });
    const release = holdLease(job, log);
    try {
      await teardown(provider, job.workspace_name);
      await store.db
        .updateTable('teardowns')
        .set({ status: 'done', lease_token: null, lease_expires_at: null, updated_at: now() })
        .where('id', '=', job.id)
        .where('lease_token', '=', job.lease)
        .execute();
      log.info('workspace torn down');
    } catch (err) {
      const attempts = job.attempts + 1;
      const message = errorMessage(err);
      const giveUp = attempts >= cleanup.maxAttempts;
      await store.db
        .updateTable('teardowns')
        .set({
          status: giveUp ? 'failed' : 'pending',
          attempts,
          last_error: message,
          next_attempt_at: now() + backoffDelay({ baseMs: cleanup.backoffBaseMs, maxMs: 30 * 60_000 }, attempts, options.random),
          lease_token: null,
          lease_expires_at: null,
          updated_at: now(),
        })
        .where('id', '=', job.id)
        .where('lease_token', '=', job.lease)
        .execute()
        .catch((dbErr: unknown) => log.error({ err: dbErr }, 'could not record teardown failure'));
      if (giveUp) log.error({ err, attempts }, 'teardown gave up: the workspace may still exist and needs removing by hand');
      else log.warn({ err, attempts }, 'teardown failed; will retry');
    } finally {
      release();
    }
  }

  async function fill(): Promise<number> {
    const free = cleanup.concurrency - active.size;
    if (free <= 0) return 0;
    const jobs = await claimDue(free);
    for (const job of jobs) {
      const p = runJob(job).finally(() => {
        active.delete(p);
        // A free slot: look for the next due job.
        loop.wake();
      });
      active.add(p);
    }
    return jobs.length;
  }

  return {
    start() {
      unsubscribe ??= options.engine?.on('teardown:queued', loop.wake);
      loop.start();
    },
    stop() {
      stopping ??= (async () => {
        unsubscribe?.();
        await loop.stop();
        // A teardown can wait minutes for a slow provider; shutdown must not. An unfinished job's
        // lease is no longer renewed once this process exits, so it is picked up again about one
        // lease later (here after a restart, or elsewhere).
        await settleWithin([...active], options.stopWaitMs ?? 10_000);
        for (const release of [...renewals]) release();
      })();
      return stopping;
    },
    wake: loop.wake,
    async drain() {
      let total = 0;
      for (;;) {
        const n = await fill();
        total += n;
        await Promise.allSettled([...active]);
        if (n === 0) return total;
      }
    },
  };
}
