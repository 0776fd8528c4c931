import { backoffDelay, createLoop, type BackgroundLogger, type BackoffPolicy, type Loop } from '../background/index.js';
import type { CatchupPass, RepositoryResult } from './sync.js';

export interface CatchupWorkerOptions {
  pass: CatchupPass;
  logger: BackgroundLogger & { info(details: object, message: string): void };
  /** Between passes. */
  intervalMs: number;
  /** The wait after a pass a repository failed in. @default 30 s doubling to 10 minutes, never longer than the interval */
  retry?: BackoffPolicy;
  random?: () => number;
}

/** After a pass the forge (or database) failed in: 30 s doubling, never longer than the interval. */
const RETRY = { baseMs: 30_000, maxMs: 10 * 60_000 };

/**
 * Catch-up at start and every `intervalMs`. A repository the forge could not be read for keeps
 * its place and is read again sooner, with backoff: nothing in its window is lost.
 */
export function createCatchupWorker(options: CatchupWorkerOptions): Loop & { readonly lastResults: readonly RepositoryResult[] } {
  const { logger } = options;
  let failures = 0;
  let lastResults: readonly RepositoryResult[] = [];
  const loop = createLoop({
    name: 'catch-up',
    logger,
    pollMs: options.intervalMs,
    step: async () => {
      const results = await options.pass.run();
      lastResults = results;
      for (const r of results) {
        if (r.error)
          logger.warn({ repository: r.repository, error: r.error }, 'catch-up could not read the repository; it keeps its place');
        else if (r.queued > 0 || r.skipped.length > 0)
          logger.info(
            { repository: r.repository, read: r.read, queued: r.queued, skipped: r.skipped },
            'catch-up found events webhooks missed',
          );
      }
      if (!results.some((r) => r.error && r.retryable)) {
        failures = 0;
        return;
      }
      failures += 1;
      return Math.min(options.intervalMs, backoffDelay(options.retry ?? RETRY, failures, options.random));
    },
  });
  return {
    start: () => loop.start(),
    stop: () => loop.stop(),
    wake: () => loop.wake(),
    get lastResults() {
      return lastResults;
    },
  };
}
