/**
 * The one shape every queue under test takes, so the bench drives baton and its peers through
 * exactly the same phases. Jobs carry a sequence number; the bench keeps the timestamps.
 */
export interface WorkerHooks {
  /** A worker received job `seq` (the moment the enqueue→claim latency ends). */
  claimed(seq: number): void;
  /** `count` jobs are durably completed (some peers only report completions in bulk). */
  completed(count?: number): void;
  /** A job or the worker loop failed; the bench counts these and prints the first. */
  error(err: unknown): void;
}

export interface QueuePeer {
  /** Row name, also the `--only` selector. */
  readonly name: string;
  /** Store / configuration column of the table. */
  readonly store: string;
  /** How the peer was set up, printed under the table. */
  readonly notes: string;
  /** Server version learned during setup, when the peer has its own server (Redis). */
  readonly version?: string;
  /** Creates fresh, empty storage (own schema, temp file or key prefix). */
  setup(): Promise<void>;
  /** Enqueues one no-op job. */
  enqueue(seq: number): Promise<void>;
  /** Starts a worker with this many jobs in flight; resolves once it is waiting for work. */
  startWorker(concurrency: number, hooks: WorkerHooks): Promise<void>;
  /** Deletes jobs still queued (after a phase ran out of time), so the next phase starts empty. */
  purge(): Promise<void>;
  /** Stops the worker and waits for in-flight jobs. */
  stopWorker(): Promise<void>;
  /** Removes everything setup() created and closes every connection. Safe to call twice. */
  teardown(): Promise<void>;
}

export interface PeerEnvironment {
  /** PostgreSQL URL (database `test`); every peer works in its own schema there. */
  pgUrl: string;
  redisUrl: string;
  /** Unique per bench run; prefixes schemas, temp dirs and Redis keys. */
  runId: string;
}
