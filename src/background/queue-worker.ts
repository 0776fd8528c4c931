import { errorMessage } from './errors.js';
import type { BackgroundLogger } from './logger.js';
import type { Loop } from './loop.js';

/** Starts telling `wake` that work may be waiting; resolves to what stops it. */
export type WakeSource = (wake: () => void) => (() => unknown) | Promise<() => unknown>;

export interface QueueWorkerOptions {
  /** Names the worker in its log lines. @example 'outbox' */
  name: string;
  logger: BackgroundLogger;
  /** The loop of one start, made afresh at each: a stopped worker can be started again. */
  createLoop: () => Loop;
  /**
   * Subscribed at start, stopped at stop: a commit hook in this process, a PostgreSQL `LISTEN` for
   * the other replicas' commits. One that fails to subscribe is logged and left out.
   * @default []
   */
  wakeSources?: readonly WakeSource[];
  /** The work the loop has taken and not finished; stop waits for all of it. */
  inFlight: ReadonlySet<Promise<unknown>>;
}

export interface QueueWorker {
  /** Subscribes the wake sources and starts the loop. A second call returns the same promise. */
  start(): Promise<void>;
  /**
   * Stops taking work (the loop's pass in progress finishes) and waits for the work in flight. A
   * second call returns the same promise; `start` after it starts again.
   */
  stop(): Promise<void>;
  /** Work may be waiting: pass now, or right after the pass in progress. */
  wake(): void;
  /** From `stop()` until the next `start()`: a pass in progress takes nothing more. */
  readonly stopping: boolean;
}

/**
 * The lifecycle of a worker that takes rows of a durable queue (the inbox's deliveries, the
 * outbox's entries) with a loop, several at once: start and stop idempotent and repeatable, wake
 * sources subscribed for as long as it runs, stop draining what was taken.
 */
export function createQueueWorker(options: QueueWorkerOptions): QueueWorker {
  const { name, logger, inFlight } = options;
  let loop: Loop | undefined;
  let startPromise: Promise<void> | undefined;
  let stopPromise: Promise<void> | undefined;
  let stopping = false;
  const unsubscribe: Array<() => unknown> = [];

  const worker: QueueWorker = {
    get stopping() {
      return stopping;
    },
    wake: () => loop?.wake(),
    start() {
      if (startPromise) return startPromise;
      stopping = false;
      stopPromise = undefined;
      loop = options.createLoop();
      startPromise = (async () => {
        for (const subscribe of options.wakeSources ?? []) {
          try {
            unsubscribe.push(await subscribe(worker.wake));
          } catch (err) {
            // Only a latency loss: the fallback poll still finds everything.
            logger.warn({ error: errorMessage(err) }, `${name} could not listen for wake-ups; polling only`);
          }
        }
        if (!stopping) loop?.start();
      })();
      return startPromise;
    },
    stop() {
      if (stopPromise) return stopPromise;
      stopping = true;
      stopPromise = (async () => {
        await startPromise;
        await Promise.all(unsubscribe.splice(0).map((stop) => stop()));
        await loop?.stop();
        await Promise.all([...inFlight]);
        startPromise = undefined;
      })();
      return stopPromise;
    },
  };
  return worker;
}
