import { BACKOFF, backoffDelay, type BackoffPolicy } from './backoff.js';
import { codeOf, errorMessage } from './errors.js';
import type { BackgroundLogger } from './logger.js';

export interface LoopOptions {
  /** Names the loop in its log lines. @example 'dispatcher' */
  name: string;
  logger: BackgroundLogger;
  /**
   * One pass of the work. Resolves to how long to wait before the next pass (ms, at most `pollMs`;
   * 0 = at once, e.g. because it found a full batch), or nothing to wait `pollMs`.
   */
  step: () => Promise<number | void>;
  /**
   * The longest wait between passes. Wake-ups are hints (a commit in this process, a NOTIFY from
   * another replica) and can be lost; this fallback poll finds whatever they missed.
   */
  pollMs: number;
  /** The wait after a failed pass, growing with consecutive failures. @default BACKOFF.loop */
  backoff?: BackoffPolicy;
  /** Wait this long before the first pass. @default 0 */
  firstDelayMs?: number;
  random?: () => number;
}

export interface Loop {
  /** Starts passing; a second call does nothing. */
  start(): void;
  /**
   * Cuts the wait short and resolves once the pass in progress (if any) has finished; no pass
   * starts after it. A second call returns the same promise.
   */
  stop(): Promise<void>;
  /** Work may be waiting: pass now, or right after the pass in progress. */
  wake(): void;
}

/**
 * The one kernel of background work (dispatcher, sweeps, teardown and outbox workers, cron, the
 * event stream's reader): a pass, then a wait that a wake-up cuts short. A failing pass never
 * stops the loop: it is logged (with its stack the first time, one line per retry after that)
 * and retried with backoff.
 */
export function createLoop(options: LoopOptions): Loop {
  const { name, logger, pollMs } = options;
  const backoff = options.backoff ?? BACKOFF.loop;
  let started = false;
  let stopping: Promise<void> | undefined;
  let stopRequested = false;
  let woken = false;
  let interrupt: (() => void) | undefined;
  let running: Promise<void> | undefined;

  function sleep(ms: number): Promise<void> {
    if (woken || stopRequested) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, Math.max(0, ms));
      function done() {
        clearTimeout(timer);
        interrupt = undefined;
        resolve();
      }
      interrupt = done;
    });
  }

  async function run(): Promise<void> {
    let failures = 0;
    if (options.firstDelayMs) await sleep(options.firstDelayMs);
    while (!stopRequested) {
      woken = false;
      let wait: number;
      try {
        const next = await options.step();
        failures = 0;
        wait = Math.min(pollMs, next ?? pollMs);
      } catch (err) {
        failures += 1;
        wait = backoffDelay(backoff, failures, options.random);
        // The first failure with its stack (a bug shows where it is); the rest of an outage one line each.
        if (failures === 1) logger.error({ loop: name, err, retryInMs: wait }, `${name} failed; retrying`);
        else
          logger.warn(
            { loop: name, error: errorMessage(err), code: codeOf(err), failures, retryInMs: wait },
            `${name} still failing; retrying`,
          );
      }
      if (stopRequested) break;
      await sleep(wait);
    }
  }

  return {
    start() {
      if (started) return;
      started = true;
      running = run();
    },
    stop() {
      stopping ??= (async () => {
        stopRequested = true;
        interrupt?.();
        await running;
      })();
      return stopping;
    },
    wake() {
      woken = true;
      interrupt?.();
    },
  };
}

/**
 * Waits for `promises` to settle, or `ms`, whichever comes first: shutdown waits for work in
 * flight, but never longer than it promised to.
 */
export async function settleWithin(promises: readonly Promise<unknown>[], ms: number): Promise<void> {
  if (promises.length === 0) return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    Promise.allSettled(promises),
    new Promise((resolve) => {
      timer = setTimeout(resolve, ms);
    }),
  ]);
  clearTimeout(timer);
}
