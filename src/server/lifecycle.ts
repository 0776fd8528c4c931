import fs from 'node:fs';
import { BACKOFF, backoffDelay, codeOf, errorMessage, settleWithin, type BackoffPolicy } from '../background/index.js';
import type { Logger } from '../log/index.js';
import { isPermanentDatabaseError, type Store } from '../store/index.js';

/** Something that runs in the background between `start()` and `stop()`. */
export interface Worker {
  /** Names it in the log when its stop fails. */
  name: string;
  start(): Promise<void> | void;
  /** Drains what it has in flight (bounded), then returns; never throws for work it abandons. */
  stop(): Promise<void>;
}

/**
 * Start-up cannot succeed without a change by a person: a database that does not exist, a login
 * it refuses, a data directory that cannot be made. `message` is the one line to show.
 */
export class StartupError extends Error {
  constructor(
    message: string,
    readonly code?: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'StartupError';
  }
}

export interface LifecycleOptions {
  logger: Logger;
  store: Store;
  /** Made at start (local workspaces and the default SQLite file live there). */
  dataDir: string;
  /**
   * After the data directory, before migrations: what this process must own before it takes
   * anything (the replica's spool slot), so it works while the database is still away. A
   * `StartupError` it throws stops the start.
   */
  claim?(): Promise<void>;
  /** After migrations, before the workers (the first start's admin token). */
  prepare(): Promise<void>;
  /** Started in this order once the database is ready; stopped in the reverse order. */
  workers: readonly Worker[];
  /** Run after every worker has stopped, in this order (the provider, then the store). */
  closers: ReadonlyArray<{ name: string; close(): Promise<void> | void }>;
  /** How long each closer may take before shutdown goes on without it. @default 5_000 */
  closeWaitMs?: number;
  /** @default BACKOFF.startup */
  startupBackoff?: BackoffPolicy;
  /** Logged once everything runs. */
  startedDetails: Record<string, unknown>;
}

export interface Lifecycle {
  /**
   * Applies migrations (retrying while the database is unreachable, giving up at once with a
   * `StartupError` when retrying cannot help), then starts the workers. Twice = the same promise.
   */
  start(): Promise<void>;
  /**
   * Stops at any point, also while start-up is still waiting for the database: the wait is cut
   * short, started workers stop in reverse order, then the closers run. Twice = the same promise.
   */
  stop(): Promise<void>;
}

const STOPPED = Symbol('stopped');

export function createLifecycle(options: LifecycleOptions): Lifecycle {
  const { logger, store } = options;
  const started: Worker[] = [];
  let starting: Promise<void> | undefined;
  let stopping: Promise<void> | undefined;
  let stopRequested = false;
  let signalStop: () => void = () => {};
  /** Resolves to STOPPED when `stop()` is called: every wait of start-up races it. */
  const stopped = new Promise<typeof STOPPED>((resolve) => {
    signalStop = () => resolve(STOPPED);
  });

  async function untilStopped<T>(promise: Promise<T>): Promise<T | typeof STOPPED> {
    // An attempt cut short still settles later; its outcome no longer matters.
    promise.catch(() => {});
    return Promise.race([promise, stopped]);
  }

  async function sleep(ms: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await untilStopped(new Promise<void>((resolve) => (timer = setTimeout(resolve, ms))));
    clearTimeout(timer);
  }

  /** Migrations, retried while the database may still come: false when stopped meanwhile. */
  async function migrate(): Promise<boolean> {
    const policy = options.startupBackoff ?? BACKOFF.startup;
    for (let attempt = 1; ; attempt++) {
      try {
        const result = await untilStopped(store.migrate());
        if (result === STOPPED) return false;
        if (result.applied.length) logger.info({ applied: result.applied }, 'migrations applied');
        return true;
      } catch (err) {
        const code = codeOf(err);
        if (isPermanentDatabaseError(err)) {
          throw new StartupError(`the database refused baton: ${errorMessage(err)}${code ? ` (${code})` : ''}; check DATABASE_URL`, code, {
            cause: err,
          });
        }
        const retryInMs = backoffDelay(policy, attempt);
        // One line per attempt, without a stack: an outage is expected, not a bug.
        logger.warn({ attempt, retryInMs, code, error: errorMessage(err) }, 'database not reachable; retrying');
        await sleep(retryInMs);
        if (stopRequested) return false;
      }
    }
  }

  return {
    start() {
      starting ??= (async () => {
        try {
          // Only baton's user may look inside (run payloads, logs, the default database). An
          // existing directory keeps its mode; a looser one is warned about at every start.
          fs.mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
        } catch (err) {
          throw new StartupError(`cannot create the data directory ${options.dataDir}: ${errorMessage(err)}`, codeOf(err), { cause: err });
        }
        await options.claim?.();
        if (!(await migrate())) return;
        await options.prepare();
        for (const worker of options.workers) {
          if (stopRequested) return;
          await worker.start();
          started.push(worker);
        }
        logger.info(options.startedDetails, 'baton started');
      })();
      return starting;
    },

    stop() {
      stopping ??= (async () => {
        stopRequested = true;
        signalStop();
        await starting?.catch(() => {});
        for (const worker of started.reverse()) {
          await worker.stop().catch((err: unknown) => logger.error({ err, worker: worker.name }, 'a worker failed to stop cleanly'));
        }
        for (const closer of options.closers) {
          const closing = Promise.resolve()
            .then(() => closer.close())
            .catch((err: unknown) => logger.error({ err, closer: closer.name }, 'could not close cleanly'));
          await settleWithin([closing], options.closeWaitMs ?? 5_000);
        }
      })();
      return stopping;
    },
  };
}
