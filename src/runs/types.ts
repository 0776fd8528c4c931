import type { TransactionScope } from '../store/index.js';
import type { Conversation } from './conversation.js';
import type { IssueView } from './issue-view.js';
import type { CountedStatus, RUN_EVENT, RunEventType, RunStatus } from './states.js';
import type { ForgeName } from './keys.js';
import type { UsageQuery, UsageReport } from './usage-report.js';

/** What the pipeline asks for: one stage for one issue, PR or repository. */
export interface TaskRequest {
  stage: string;
  owner: string;
  repo: string;
  /** Issue or PR number; absent for repository-wide stages (maintenance). */
  number?: number;
  /** The forge the repository is on (part of the key for GitHub and GitLab). @default 'gitea' */
  forge?: ForgeName;
  /** GitLab: `number` is a merge request's (its numbers are apart from the issues'). */
  mergeRequest?: boolean;
  /** Details the workspace needs (bot account, clone URL, deploy env, what triggered it). */
  payload?: RunPayload;
  /**
   * What a duplicate does while the live run is already provisioning or running:
   * `followup` records exactly one re-run after it; `drop` ignores it. @default 'followup'
   */
  onDuplicate?: 'followup' | 'drop';
  /** Start no earlier than this many ms from now. */
  delayMs?: number;
  /** Overrides the dedup key `{stage}:{owner}/{repo}#{number}` (cron slots use this; see keys.ts). */
  key?: string;
  /** @default config queue.maxAttempts */
  maxAttempts?: number;
}

/** Free-form, JSON-serialisable details carried by a run. Known fields are typed. */
export interface RunPayload {
  /** Which bot account ('dev' | 'review' | custom) acts for this stage. */
  account?: string;
  deployEnv?: string;
  /** The stage's `skipPermissions` when the run was queued (runs queued before it existed lack it). */
  skipPermissions?: boolean;
  /** Human-readable cause, e.g. "label ready-for-development added by alice". */
  trigger?: string;
  /** What `$ARGUMENTS` in the stage's prompt stands for, when given (a manual run); the number otherwise. */
  arguments?: string;
  /** The branch the runner works on, when given (a manual run). */
  ref?: string;
  /** The repository is declared in baton.yaml, not on the forge: no forge token, no status comments. */
  declared?: boolean;
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
  /** The forge the repository is on (the payload's); `gitea` for runs that name none. */
  forge?: ForgeName;
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
  /** Whether `costUsd` was reported by the agent's CLI or computed by baton from its tokens; null: no cost. */
  costSource?: 'reported' | 'computed' | null;
  durationMs: number | null;
  createdAt: number;
  updatedAt: number;
  claimedAt: number | null;
  startedAt: number | null;
  finishedAt: number | null;
  /** Its limits, recorded when it was claimed (null before): tokens, and ms from its start. */
  limits: { tokenCap: number | null; maxDurationMs: number | null };
  /** Why a `held` run waits: which daily budget is spent, and until when; null otherwise. */
  heldReason: string | null;
  /** Which attempt of its agent this is (1 = the first); a transient failure queues the next. */
  agentAttempt: number;
}

export interface RunEvent {
  id: number;
  runId: number;
  type: RunEventType;
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

/** What a workspace reports at the end of a run (the statuses are `OUTCOME_STATUSES`). */
export interface RunOutcome {
  status: 'succeeded' | 'failed' | 'timed_out';
  exitCode?: number | null;
  summary?: string | null;
  usage?: Usage | null;
  costUsd?: number | null;
  costSource?: 'reported' | 'computed' | null;
  durationMs?: number | null;
  /** Why it failed: a runner's machine-readable kind (`agent_overloaded`, …) or words a person can act on. */
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
  /** Runs created at or after this time (epoch ms). */
  since?: number;
  /** Runs created before this time (epoch ms). */
  until?: number;
  /**
   * Words in the issue's title, the run's error or its summary (case-insensitive, a substring):
   * `npm test`, `rate limit`. A scan of the rows the other filters leave, newest first, that stops
   * at the page's end.
   */
  text?: string;
  /** Runs with an id below this (cursor pagination, newest first). */
  beforeId?: number;
  /** @default 50 */
  limit?: number;
}

export interface QueueStats {
  queued: number;
  /** Queued runs a spent daily budget holds back. */
  held: number;
  provisioning: number;
  running: number;
  dead: number;
  failed: number;
  paused: boolean;
  concurrency: number;
}

export type StageCounts = Record<CountedStatus, number>;

/** `GET /api/queue/stats`, the dashboard summary and `baton queue stats`. */
export interface QueueSummary extends QueueStats {
  /** Live and stuck runs per stage. */
  stages: Record<string, StageCounts>;
  /** Runs finished since 00:00 UTC today, with their usage. */
  today: { since: number; finished: number; succeeded: number; tokens: number; costUsd: number };
}

/** The queue summary and the run counts behind it, read together (one `/metrics` scrape). */
export interface QueueOverview {
  summary: QueueSummary;
  /** Runs per stage and status, every status. */
  counts: Array<{ stage: string; status: RunStatus; count: number }>;
}

/**
 * Called inside the transition's transaction, so side records (outbox rows) commit or roll back
 * with it; what they wake goes in `scope.afterCommit`.
 *
 * `events`: the event types the hook may write for (`hookFor` sets them). A transition whose event
 * no hook may write for needs no transaction around its statement: on PostgreSQL a claim, a start
 * or an end is then one round trip instead of three. Without it the hook is called for every event.
 */
export type TransitionHook = ((scope: TransactionScope, change: { run: Run; event: RunEvent }) => Promise<void>) & {
  readonly events?: ReadonlySet<RunEventType>;
};

/** Signals this process's listeners get, each after the commit that caused it. */
export type RunSignals = {
  /** A `run_events` row committed (every type): the timeline, metrics, the live stream. */
  'run:event': [event: RunEvent, run: Run];
  /** Work or a concurrency slot may have appeared: dispatchers should claim. */
  'queue:wake': [];
  /** A workspace's teardown was queued. */
  'teardown:queued': [];
};

/** Every read of runs and their events (one module: `queries.ts`). */
export interface RunQueries {
  get(runId: number): Promise<Run | null>;
  /** The runs with these ids that exist, in one query. */
  getMany(runIds: readonly number[]): Promise<Map<number, Run>>;
  findByWorkspace(workspaceName: string): Promise<Run | null>;
  list(filter?: RunFilter): Promise<Run[]>;
  /** Live runs (queued, provisioning, running), oldest first. */
  listLive(): Promise<Run[]>;
  events(runId: number): Promise<RunEvent[]>;
  /** Events of all runs with id > afterId, oldest first (SSE resume). */
  eventsSince(afterId: number, limit?: number): Promise<RunEvent[]>;
  /** The newest event's id, 0 when there is none. */
  lastEventId(): Promise<number>;
  /**
   * When the earliest queued run that is not due at `now` becomes due (epoch ms), or null when
   * there is none. Runs already due are left out: they wait for a free slot, and whatever frees one
   * wakes the dispatcher.
   */
  nextDelayedRunAt(now: number): Promise<number | null>;
  isPaused(): Promise<boolean>;
  stats(): Promise<QueueStats>;
  /** The queue summary as of `now` (for "today"). */
  summary(now: number): Promise<QueueSummary>;
  overview(now: number): Promise<QueueOverview>;
  /**
   * Every run of an issue and of the pull requests linked to it, as its SDLC view (`now` ends
   * what is still going); null when there is none. With `forge`, only that forge's runs (and on
   * GitLab only the issue's, or with `mergeRequest` the merge request's).
   */
  issue(
    issue: { owner: string; repo: string; number: number; forge?: ForgeName; mergeRequest?: boolean },
    now: number,
  ): Promise<IssueView | null>;
  /** Tokens and cost of the runs that finished in a range of UTC days, grouped one way. */
  usage(query: UsageQuery): Promise<UsageReport>;
  /** The run's conversation (its question, reply, turns, earlier usage), or null when its runner kept no transcript and never asked. */
  conversation(runId: number): Promise<Conversation | null>;
  /** The transcript a runner uploaded (JSONL), or null. */
  transcript(runId: number): Promise<Buffer | null>;
}

/**
 * The transitions of runs, and the signals they send once committed. Reads are `RunQueries`,
 * built beside it at the composition root and handed to whoever reads.
 */
export interface RunEngine {
  enqueue(request: TaskRequest): Promise<EnqueueResult>;
  /** Claims up to the free capacity (global and per repository) of due queued runs. */
  claim(max?: number): Promise<ClaimedRun[]>;
  /** Extends the lease; false when the lease was lost (the caller must stop working on the run). */
  heartbeat(runId: number, leaseToken: string): Promise<boolean>;
  /** Records the workspace name, callback-token hash and the run's limits before the workspace is created. */
  recordWorkspace(
    runId: number,
    leaseToken: string,
    details: { workspaceName: string; callbackTokenHash: string; tokenCap?: number; maxDurationMs?: number },
  ): Promise<{ earlierTokenHashes: string[] }>;
  /** provisioning → running: the workspace is up; the lease is released, the slot kept. */
  markRunning(runId: number, leaseToken: string, details: { workspaceId: string }): Promise<Run>;
  /**
   * A provisioning attempt failed: back to queued with backoff, or `dead` when attempts run out, or
   * `failed` when permanent. A `transient` failure (the errno code of a resource that ran out for
   * a while: a full disk, no descriptors left) goes back to the queue even past the attempts.
   */
  failAttempt(runId: number, leaseToken: string, error: string, options?: { permanent?: boolean; transient?: string }): Promise<Run>;
  /** provisioning | running → succeeded | failed | timed_out. Idempotent: a finished run is returned unchanged. */
  complete(runId: number, outcome: RunOutcome): Promise<{ run: Run; changed: boolean }>;
  cancel(runId: number, reason?: string): Promise<Run>;
  /** failed | dead | timed_out | cancelled → queued, attempts reset. */
  retry(runId: number): Promise<Run>;
  pause(): Promise<void>;
  resume(): Promise<void>;
  /** Appends a log/usage batch (`run:progress`) to the run's timeline. */
  appendEvent(runId: number, type: typeof RUN_EVENT.progress | typeof RUN_EVENT.prompt, data: Record<string, unknown>): Promise<RunEvent>;
  /** Listens to a signal of this process (see `RunSignals`); returns the function that stops listening. */
  on<K extends keyof RunSignals>(name: K, listener: (...args: RunSignals[K]) => void): () => void;
}
