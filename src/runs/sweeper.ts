import { createLoop, type Loop } from '../background/index.js';
import type { Logger } from '../log/index.js';
import type { RunService } from './engine.js';
import { RUN_EVENT } from './states.js';

export interface SweeperOptions {
  engine: RunService;
  logger: Logger;
  /**
   * The duration limit of running runs claimed without one of their own (STALE_WORKSPACE_MINUTES);
   * the others end `timed_out` at their own limit (plus a grace).
   */
  staleAfterMs: number;
  /** Longest wait between checks of the runs' duration limits (it wakes at the earliest deadline anyway). @default 60_000 */
  deadlineCheckMs?: number;
  /** How often expired provisioning leases are reclaimed. @default 15_000 */
  leaseCheckMs?: number;
  /** How often stale runs are timed out and extra sweeps (reconcile) run. @default 600_000 */
  sweepMs?: number;
  /** How often finished runs past retention are pruned. @default 3_600_000 */
  pruneMs?: number;
  /** More work for each sweep (pruning of other modules' tables). */
  onSweep?: () => Promise<void>;
  /**
   * Brings workspaces and runs into agreement (the provider's reconcile): at start, then every
   * `workspaceCheckMs`, so a run whose runner died is failed and frees its slot within seconds.
   */
  checkWorkspaces?: () => Promise<void>;
  /** @default 15_000 */
  workspaceCheckMs?: number;
  now?: () => number;
}

export interface Sweeper {
  start(): void;
  stop(): Promise<void>;
  /** One full sweep now: leases, stale runs, workspaces, extra sweeps, pruning. */
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

  async function timeOutOverdue(): Promise<number> {
    const runs = await engine.timeOutOverdueRuns(options.staleAfterMs);
    for (const run of runs) logger.warn({ runId: run.id, key: run.key }, 'run passed its duration limit; tearing its workspace down');
    return runs.length;
  }

  async function timeOutStale(): Promise<number> {
    const n = await timeOutOverdue();
    await options.onSweep?.();
    return n;
  }

  async function prune(): Promise<number> {
    const n = await engine.prune();
    if (n > 0) logger.info({ count: n }, 'pruned finished runs past retention');
    return n;
  }

  const sweepMs = options.sweepMs ?? 600_000;
  const pruneMs = options.pruneMs ?? 3_600_000;
  // Five loops, each on its own clock. The lease check, the workspace check and the stale sweep
  // also run at start: after a crash, that is when there is most to clean up. A failed sweep or
  // prune waits for its next turn rather than retrying sooner; a failed workspace check (the
  // provider may be what is failing) backs off.
  //
  // Each run's own duration limit, on time: the loop sleeps until the earliest deadline, and a run
  // starting here wakes it to look again (one started on another replica is seen at the next poll).
  // Overdue runs another replica holds locked are looked at again a second later, not in a spin.
  const deadlines = createLoop({
    name: 'duration limits',
    logger,
    pollMs: options.deadlineCheckMs ?? 60_000,
    step: async () => {
      await timeOutOverdue();
      const next = await engine.nextDeadline(options.staleAfterMs);
      return next === null ? undefined : Math.max(1000, next - now() + 1);
    },
  });
  let unsubscribe: (() => void) | undefined;
  const loops: Loop[] = [
    deadlines,
    createLoop({
      name: 'lease reclaim',
      logger,
      pollMs: options.leaseCheckMs ?? 15_000,
      step: async () => void (await reclaim()),
    }),
    createLoop({
      name: 'stale sweep',
      logger,
      pollMs: sweepMs,
      backoff: { baseMs: sweepMs, maxMs: sweepMs },
      step: async () => void (await timeOutStale()),
    }),
    ...(options.checkWorkspaces
      ? [
          createLoop({
            name: 'workspace check',
            logger,
            pollMs: options.workspaceCheckMs ?? 15_000,
            step: options.checkWorkspaces,
          }),
        ]
      : []),
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
      unsubscribe ??= engine.on('run:event', (event) => event.type === RUN_EVENT.started && deadlines.wake());
      for (const loop of loops) loop.start();
    },
    async stop() {
      unsubscribe?.();
      await Promise.all(loops.map((loop) => loop.stop()));
    },
    async sweep() {
      const reclaimed = await reclaim();
      await options.checkWorkspaces?.();
      return { reclaimed, timedOut: await timeOutStale(), pruned: await prune() };
    },
  };
}
