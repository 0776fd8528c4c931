import type { Logger } from 'pino';
import type { FullRunEngine } from './engine.js';

export interface SweeperOptions {
  engine: FullRunEngine;
  logger: Logger;
  /** Running runs older than this end `timed_out` (STALE_WORKSPACE_MINUTES). */
  staleAfterMs: number;
  /** How often expired provisioning leases are reclaimed. @default 15_000 */
  leaseCheckMs?: number;
  /** How often stale runs are timed out and extra sweeps (reconcile) run. @default 600_000 */
  sweepMs?: number;
  /** How often finished runs past retention are pruned. @default 3_600_000 */
  pruneMs?: number;
  /** More work for each sweep (the provider's reconcile). */
  onSweep?: () => Promise<void>;
  now?: () => number;
}

export interface Sweeper {
  start(): void;
  stop(): Promise<void>;
  /** One full sweep now: leases, stale runs, extra sweeps, pruning. */
  sweep(): Promise<{ reclaimed: number; timedOut: number; pruned: number }>;
}

/** The periodic housekeeping that keeps a crash or a silent workspace from holding a slot forever. */
export function createSweeper(options: SweeperOptions): Sweeper {
  const { engine, logger } = options;
  const now = options.now ?? Date.now;
  const timers: NodeJS.Timeout[] = [];
  const inFlight = new Set<Promise<unknown>>();

  const guard = (name: string, fn: () => Promise<unknown>) => () => {
    const p = fn()
      .catch((err: unknown) => logger.error({ err }, `${name} failed`))
      .finally(() => inFlight.delete(p));
    inFlight.add(p);
  };

  async function reclaim(): Promise<number> {
    const n = await engine.reclaimExpiredLeases();
    if (n > 0) logger.warn({ count: n }, 'reclaimed runs whose provisioning lease expired');
    return n;
  }

  async function timeOutStale(): Promise<number> {
    const minutes = Math.round(options.staleAfterMs / 60_000);
    const runs = await engine.timeOutStaleRuns(
      now() - options.staleAfterMs,
      `no completion callback within ${minutes} minutes (STALE_WORKSPACE_MINUTES)`,
    );
    for (const run of runs) logger.warn({ runId: run.id, key: run.key }, 'run timed out; tearing its workspace down');
    await options.onSweep?.();
    return runs.length;
  }

  async function prune(): Promise<number> {
    const n = await engine.prune();
    if (n > 0) logger.info({ count: n }, 'pruned finished runs past retention');
    return n;
  }

  return {
    start() {
      if (timers.length > 0) return;
      timers.push(setInterval(guard('lease reclaim', reclaim), options.leaseCheckMs ?? 15_000));
      timers.push(setInterval(guard('stale sweep', timeOutStale), options.sweepMs ?? 600_000));
      timers.push(setInterval(guard('prune', prune), options.pruneMs ?? 3_600_000));
      guard('startup sweep', async () => {
        await reclaim();
        await timeOutStale();
      })();
    },
    async stop() {
      for (const t of timers.splice(0)) clearInterval(t);
      await Promise.allSettled([...inFlight]);
    },
    async sweep() {
      return { reclaimed: await reclaim(), timedOut: await timeOutStale(), pruned: await prune() };
    },
  };
}
