import { createLoop, type Loop } from '../background/index.js';
import type { Logger } from '../log/index.js';
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

  const sweepMs = options.sweepMs ?? 600_000;
  const pruneMs = options.pruneMs ?? 3_600_000;
  // Three loops, each on its own clock. The lease check and the stale sweep also run at start:
  // after a crash, that is when there is most to clean up. A failed sweep or prune waits for its
  // next turn rather than retrying sooner: the reconcile in it calls the workspace provider,
  // which may be what is failing.
  const loops: Loop[] = [
    createLoop({ name: 'lease reclaim', logger, pollMs: options.leaseCheckMs ?? 15_000, step: async () => void (await reclaim()) }),
    createLoop({
      name: 'stale sweep',
      logger,
      pollMs: sweepMs,
      backoff: { baseMs: sweepMs, maxMs: sweepMs },
      step: async () => void (await timeOutStale()),
    }),
    createLoop({
      name: 'prune',
      logger,
      pollMs: pruneMs,
      backoff: { baseMs: pruneMs, maxMs: pruneMs },
      firstDelayMs: pruneMs,
      step: async () => void (await prune()),
    }),
  ];

  return {
    start() {
      for (const loop of loops) loop.start();
    },
    async stop() {
      await Promise.all(loops.map((loop) => loop.stop()));
    },
    async sweep() {
      return { reclaimed: await reclaim(), timedOut: await timeOutStale(), pruned: await prune() };
    },
  };
}
