import { createLoop, type BackgroundLogger } from '../../background/index.js';
import type { InboxStore } from '../inbox/index.js';
import type { Spool } from './spool.js';

/** After a failed drain (the database still away): 250 ms doubling to 5 s, so it is back soon after the database. */
const DRAIN_BACKOFF = { baseMs: 250, maxMs: 5_000 };

export interface SpoolDrainer {
  start(): void;
  stop(): Promise<void>;
}

/**
 * Moves the spool into the inbox whenever it holds something: woken by every append while the
 * database answers, polling (with backoff) while it does not. Started first among the workers,
 * so a replica restarted with a spool puts it into the inbox before anything else; meanwhile new
 * deliveries join the spool behind it (the ingress), so the order they arrived in holds. Each
 * pass also takes over the slots of processes on the same spool directory that ended since (a
 * replica scaled away, a second `serve` killed), whether or not the database answers.
 */
export function createSpoolDrainer(deps: {
  spool: Spool;
  inbox: Pick<InboxStore, 'insert'>;
  logger: BackgroundLogger & { info(details: Record<string, unknown>, message: string): void };
  /** @default 1_000 */
  pollMs?: number;
}): SpoolDrainer {
  const { spool, inbox, logger } = deps;
  let unsubscribe: (() => void) | undefined;
  const loop = createLoop({
    name: 'spool',
    logger,
    pollMs: deps.pollMs ?? 1_000,
    backoff: DRAIN_BACKOFF,
    step: async () => {
      await spool.open();
      await spool.adopt();
      if (spool.pending === 0) return;
      const moved = await spool.drain((delivery) => inbox.insert(delivery));
      if (moved > 0) logger.info({ moved, left: spool.pending }, 'spooled deliveries moved into the inbox');
      return spool.pending > 0 ? 0 : undefined;
    },
  });
  return {
    start() {
      // While the database is away each append would wake a drain that fails at once: the
      // backoff decides then.
      unsubscribe ??= spool.onAppend(() => {
        if (spool.health().lastDrainError === null) loop.wake();
      });
      loop.start();
    },
    async stop() {
      unsubscribe?.();
      unsubscribe = undefined;
      await loop.stop();
    },
  };
}
