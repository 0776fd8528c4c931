import type { RunEventType, RunStatus } from './states.js';

/** What the pipeline asks for: one stage for one issue, PR or repository. */
export interface TaskRequest {
  stage: string;
  owner: string;
  repo: string;
  /** Issue or PR number; absent for repository-wide stages (maintenance). */
  number?: number;
  /** Details the workspace needs (bot account, clone URL, deploy env, what triggered it). */
  payload?: RunPayload;
  /**
   * What a duplicate does while the live run is already provisioning or running:
   * `followup` records exactly one re-run after it; `drop` ignores it. @default 'followup'
   */
  onDuplicate?: 'followup' | 'drop';
  /** Start no earlier than this many ms from now. */
  delayMs?: number;
  /** Overrides the dedup key `{stage}-{owner}-{repo}-{number}` (cron slots use this). */
  key?: string;
  /** @default config queue.maxAttempts */
  maxAttempts?: number;
}

/** Free-form, JSON-serialisable details carried by a run. Known fields are typed. */
export interface RunPayload {
  /** Which bot account ('dev' | 'review' | custom) acts for this stage. */
  account?: string;
  cloneUrl?: string;
  deployEnv?: string;
  /** The stage's `skipPermissions` when the run was queued (runs queued before it existed lack it). */
  skipPermissions?: boolean;
  /** Human-readable cause, e.g. "label ready-for-development added by alice". */
  trigger?: string;
  [key: string]: unknown;
}

export interface Usage {
  inputTokens?: number;
  outputTokens?: number;
  cacheReadInputTokens?: number;
  cacheCreationInputTokens?: number;
  [key: string]: unknown;
}

export interface Run {
  id: number;
  key: string;
  stage: string;
  owner: string;
  repo: string;
  number: number | null;
  status: RunStatus;
  payload: RunPayload;
  attempts: number;
  maxAttempts: number;
  /** Not claimed before this time (epoch ms): creation, a delay, or a retry backoff. */
  runAt: number;
  workspaceName: string | null;
  workspaceId: string | null;
  /** A duplicate arrived while this run was live: one more run follows it. */
  followup: boolean;
  lastError: string | null;
  exitCode: number | null;
  summary: string | null;
  usage: Usage | null;
  costUsd: number | null;
  durationMs: number | null;
  createdAt: number;
  updatedAt: number;
  claimedAt: number | null;
  startedAt: number | null;
  finishedAt: number | null;
}

export interface RunEvent {
  id: number;
  runId: number;
  type: RunEventType | (string & {});
  fromStatus: RunStatus | null;
  toStatus: RunStatus | null;
  data: Record<string, unknown> | null;
  createdAt: number;
}

export type EnqueueResult =
  /** A new run was queued. */
  | { outcome: 'queued'; run: Run }
  /** A run with the same key was still queued; this request merged into it. */
  | { outcome: 'coalesced'; run: Run }
  /** The live run was already provisioning or running; one follow-up run will start after it. */
  | { outcome: 'followup'; run: Run }
  /** The live run was provisioning or running and the stage drops duplicates. */
  | { outcome: 'dropped'; run: Run };

/** What a workspace reports at the end of a run. */
export interface RunOutcome {
  status: 'succeeded' | 'failed' | 'timed_out';
  exitCode?: number | null;
  summary?: string | null;
  usage?: Usage | null;
  costUsd?: number | null;
  durationMs?: number | null;
  /** Why it failed, in words a person can act on. */
  error?: string | null;
}

export interface ClaimedRun {
  run: Run;
  /** Fences every later step of this claim: a replica that lost the lease cannot finish the run. */
  leaseToken: string;
}

export interface RunFilter {
  status?: RunStatus | RunStatus[];
  stage?: string;
  owner?: string;
  repo?: string;
  number?: number;
  /** Runs with an id below this (cursor pagination, newest first). */
  beforeId?: number;
  /** @default 50 */
  limit?: number;
}

export interface QueueStats {
  queued: number;
  provisioning: number;
  running: number;
  dead: number;
  failed: number;
  paused: boolean;
  concurrency: number;
}

/** Raised for transitions the state machine does not allow (retrying a running run, …). */
export class TransitionError extends Error {
  constructor(
    message: string,
    readonly code: 'not_found' | 'conflict',
  ) {
    super(message);
    this.name = 'TransitionError';
  }
}

/** Called inside the transition's transaction, so side records (outbox rows) commit with it. */
export type TransitionHook = (
  trx: import('kysely').Kysely<import('../store/index.js').Database>,
  change: { run: Run; event: RunEvent },
) => Promise<void>;

export interface RunEngine {
  enqueue(request: TaskRequest): Promise<EnqueueResult>;
  /** Claims up to the free capacity (global and per repository) of due queued runs. */
  claim(max?: number): Promise<ClaimedRun[]>;
  /** Extends the lease; false when the lease was lost (the caller must stop working on the run). */
  heartbeat(runId: number, leaseToken: string): Promise<boolean>;
  /** Records the workspace name and callback-token hash before the workspace is created. */
  recordWorkspace(runId: number, leaseToken: string, details: { workspaceName: string; callbackTokenHash: string }): Promise<void>;
  /** provisioning → running: the workspace is up; the lease is released, the slot kept. */
  markRunning(runId: number, leaseToken: string, details: { workspaceId: string }): Promise<Run>;
  /** A provisioning attempt failed: back to queued with backoff, or `dead` when attempts run out, or `failed` when permanent. */
  failAttempt(runId: number, leaseToken: string, error: string, options?: { permanent?: boolean }): Promise<Run>;
  /** running → succeeded | failed | timed_out. Idempotent: a finished run is returned unchanged. */
  complete(runId: number, outcome: RunOutcome): Promise<{ run: Run; changed: boolean }>;
  cancel(runId: number, reason?: string): Promise<Run>;
  /** failed | dead | timed_out | cancelled → queued, attempts reset. */
  retry(runId: number): Promise<Run>;
  pause(): Promise<void>;
  resume(): Promise<void>;
  isPaused(): Promise<boolean>;
  /** Appends a non-transition event (log batch, usage) to the run's timeline. */
  appendEvent(runId: number, type: string, data: Record<string, unknown>): Promise<RunEvent>;
  get(runId: number): Promise<Run | null>;
  findByWorkspace(workspaceName: string): Promise<Run | null>;
  list(filter?: RunFilter): Promise<Run[]>;
  events(runId: number): Promise<RunEvent[]>;
  /** Events of all runs with id > afterId, oldest first (SSE resume). */
  eventsSince(afterId: number, limit?: number): Promise<RunEvent[]>;
  stats(): Promise<QueueStats>;
  /** Provisioning runs whose lease expired go back to the queue. Returns how many. */
  reclaimExpiredLeases(): Promise<number>;
  /** Deletes finished runs (and their events) older than the retention. Returns how many. */
  prune(): Promise<number>;
  /** Subscribes to every event after it commits; returns an unsubscribe function. */
  subscribe(listener: (event: RunEvent, run: Run) => void): () => void;
  /** Subscribes to "work or capacity may be available" signals. */
  onWake(listener: () => void): () => void;
}
