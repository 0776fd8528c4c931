/**
 * The run engine's hot transitions on PostgreSQL, each one statement: the run's row and its
 * `run_events` row are written together by a data-modifying CTE (and, for an ending run, its
 * teardown), so a transition costs one round trip. Without hooks it runs as a transaction of its
 * own (`store.runStatement`); with hooks it runs inside the transaction the hooks write in.
 *
 * SQLite cannot write in a CTE and needs none of this (it runs in-process): it takes the
 * statement-per-step path in enqueue.ts, claim.ts and engine.ts, which is also the fallback here
 * for the rare cases a statement leaves alone (a duplicate key, a follow-up, a run already over).
 *
 * Statuses and event names are this module's own constants spliced in as literals, never input;
 * PostgreSQL matches the partial unique index of `ON CONFLICT` only against literals anyway.
 */
import { sqlLiteral, type PreparedStatement, type Store } from '../store/index.js';
import { toRun, toRunEvent, type RunRow } from './rows.js';
import { insertedEvent, queuedRunRow, type QueuedRunValues } from './run-statements.js';
import { LIVE_STATUSES, RUN_EVENT, RUN_STATUS, SLOT_STATUSES, TRANSITIONS, type RunStatus } from './states.js';
import type { Run, RunEvent } from './types.js';

/**
 * Every column of `runs`, by name: a prepared statement must not return `*` (see
 * `Store.prepare`). `satisfies` makes a column added to `RunsTable` a compile error here.
 */
const RUN_COLUMN_NAMES = {
  id: true,
  key: true,
  stage: true,
  owner: true,
  repo: true,
  number: true,
  status: true,
  payload: true,
  attempts: true,
  max_attempts: true,
  run_at: true,
  lease_token: true,
  lease_expires_at: true,
  workspace_name: true,
  workspace_id: true,
  callback_token_hash: true,
  followup: true,
  followup_payload: true,
  last_error: true,
  exit_code: true,
  summary: true,
  usage: true,
  cost_usd: true,
  duration_ms: true,
  created_at: true,
  updated_at: true,
  claimed_at: true,
  started_at: true,
  finished_at: true,
  token_cap: true,
  max_duration_ms: true,
  held_reason: true,
  agent_attempt: true,
} satisfies Record<keyof RunRow, true>;

const RUN_COLUMNS = Object.keys(RUN_COLUMN_NAMES)
  .map((c) => `runs.${c}`)
  .join(', ');
const EVENT_COLUMNS = 'id, run_id, type, from_status, to_status, data, created_at';
/** The event's columns in the final SELECT, prefixed so they cannot collide with the run's. */
const EVENT_SELECT =
  'event.id AS event_id, event.run_id AS event_run_id, event.type AS event_type, event.from_status AS event_from_status, ' +
  'event.to_status AS event_to_status, event.data AS event_data, event.created_at AS event_created_at';

const list = (values: readonly string[]) => values.map((v) => `'${v}'`).join(', ');
/** The states a run may reach `to` from, per `TRANSITIONS`: the statements enforce the table too. */
const sourcesOf = (to: RunStatus) => (Object.keys(TRANSITIONS) as RunStatus[]).filter((from) => TRANSITIONS[from].includes(to));

interface EventColumns {
  event_id: number;
  event_run_id: number;
  event_type: string;
  event_from_status: string | null;
  event_to_status: string | null;
  event_data: string | null;
  event_created_at: number;
}

export type WrittenRow = RunRow & EventColumns;

/** A run as a hot statement left it, with the event that records the change. */
export interface Written {
  run: Run;
  event: RunEvent;
}

export function toWritten(row: WrittenRow): Written {
  return {
    run: toRun(row),
    event: toRunEvent({
      id: row.event_id,
      run_id: row.event_run_id,
      type: row.event_type,
      from_status: row.event_from_status,
      to_status: row.event_to_status,
      data: row.event_data,
      created_at: row.event_created_at,
    }),
  };
}

/**
 * $1 key, $2 stage, $3 owner, $4 repo, $5 number, $6 payload, $7 max_attempts, $8 run_at, $9 now,
 * $10 event data (`enqueueValues`). Returns only the new ids: the caller knows the rest
 * (run-statements.ts `queuedRunRow`). No row when a live run holds the key (enqueue.ts then
 * coalesces or follows up).
 */
const ENQUEUE = `WITH inserted AS (
  INSERT INTO runs (key, stage, owner, repo, number, status, payload, attempts, max_attempts, run_at, followup, created_at, updated_at)
  VALUES ($1, $2, $3, $4, $5, '${RUN_STATUS.queued}', $6, 0, $7, $8, 0, $9, $9)
  ON CONFLICT (key) WHERE status IN (${list(LIVE_STATUSES)}) DO NOTHING
  RETURNING id, status
), event AS (
  INSERT INTO run_events (run_id, type, from_status, to_status, data, created_at)
  SELECT id, '${RUN_EVENT.queued}', NULL, status, $10, $9 FROM inserted
  RETURNING id, run_id
)
SELECT inserted.id, event.id AS event_id FROM inserted JOIN event ON event.run_id = inserted.id`;

export function enqueueValues(v: QueuedRunValues): unknown[] {
  return [v.key, v.stage, v.owner, v.repo, v.number, v.payload, v.maxAttempts, v.runAt, v.now, v.eventData];
}

/** The run and event `ENQUEUE` wrote. */
export function toEnqueued(row: { id: number; event_id: number }, v: QueuedRunValues): Written {
  const run = queuedRunRow(row.id, v);
  const event = insertedEvent(row.event_id, {
    runId: row.id,
    type: RUN_EVENT.queued,
    from: null,
    to: run.status,
    data: v.eventData,
    createdAt: v.now,
  });
  return { run, event };
}

/**
 * The first statement of a claim: takes the `dispatch_state` lock that serialises claims (see
 * claim.ts), and lets this transaction's COMMIT return before its WAL is flushed.
 *
 * Why the claim may skip the wait: claims hold that lock through their COMMIT, so the flush (a
 * few ms on a real disk) would bound how fast anyone can claim. What a database crash can lose is
 * only the last fraction of a second of such claims, never part of one (PostgreSQL's asynchronous
 * commit loses whole transactions, in order, and any later ordinary commit flushes them too). A
 * lost claim is a run back in `queued` whose lease nobody knows: the dispatcher that made it
 * finds the lease gone at its next step, exactly as after an expired lease, and the run is
 * claimed again. Every other transition waits for the flush as usual.
 */
const CLAIM_LOCK = `SELECT paused, set_config('synchronous_commit', 'off', true) AS commit_mode FROM dispatch_state WHERE id = 1 FOR UPDATE`;

/**
 * $1 now, $2 most runs to claim, $3 concurrency, $4 lease token, $5 lease expiry. Runs inside the
 * claim's transaction after it has locked `dispatch_state`: the statement's snapshot is taken
 * after that lock, so the count of slots in use sees every earlier claim's commit (a snapshot taken
 * before it, as in one statement that also took the lock, could overshoot the limit).
 */
const CLAIM = `WITH candidates AS (
  SELECT id FROM runs
  WHERE status = '${RUN_STATUS.queued}' AND run_at <= $1
  ORDER BY run_at, id
  LIMIT GREATEST(0, LEAST($2::bigint, $3::bigint - (SELECT count(*) FROM runs WHERE status IN (${list(SLOT_STATUSES)}))))
  FOR UPDATE SKIP LOCKED
), claimed AS (
  UPDATE runs SET status = '${RUN_STATUS.provisioning}', attempts = runs.attempts + 1, lease_token = $4, lease_expires_at = $5,
    claimed_at = $1, updated_at = $1
  FROM candidates WHERE runs.id = candidates.id AND runs.status = '${RUN_STATUS.queued}'
  RETURNING ${RUN_COLUMNS}
), event AS (
  INSERT INTO run_events (run_id, type, from_status, to_status, data, created_at)
  SELECT id, '${RUN_EVENT.claimed}', '${RUN_STATUS.queued}', status, '{"attempt":' || attempts || '}', $1 FROM claimed ORDER BY run_at, id
  RETURNING ${EVENT_COLUMNS}
)
SELECT claimed.*, ${EVENT_SELECT} FROM claimed JOIN event ON event.run_id = claimed.id ORDER BY claimed.run_at, claimed.id`;

/**
 * The whole claim as one `Store.runScript`, one round trip where BEGIN, `CLAIM_LOCK`, `CLAIM` and
 * COMMIT take four: the lock first, then the claim, a statement of its own so that its snapshot
 * (and its count of slots in use) is taken under the lock. Paused, it claims nothing. Values are
 * written in as literals (a script takes no parameters); they are numbers and the lease token,
 * all made by the engine. Used when no hook must write in the claim's transaction and no budget or
 * per-repository limit must be checked under the lock (claim.ts).
 */
export function claimScript(v: { now: number; max: number; concurrency: number; leaseToken: string; leaseExpiresAt: number }): string[] {
  const now = sqlLiteral(v.now);
  const max = sqlLiteral(Math.min(v.max, Number.MAX_SAFE_INTEGER));
  const free = `GREATEST(0, LEAST(${max}, ${sqlLiteral(v.concurrency)} - (SELECT count(*) FROM runs WHERE status IN (${list(SLOT_STATUSES)}))))`;
  return [
    CLAIM_LOCK,
    `WITH candidates AS (
  SELECT id FROM runs
  WHERE status = '${RUN_STATUS.queued}' AND run_at <= ${now}
  ORDER BY run_at, id
  LIMIT CASE WHEN (SELECT paused FROM dispatch_state WHERE id = 1) = 0 THEN ${free} ELSE 0 END
  FOR UPDATE SKIP LOCKED
), claimed AS (
  UPDATE runs SET status = '${RUN_STATUS.provisioning}', attempts = runs.attempts + 1, lease_token = ${sqlLiteral(v.leaseToken)},
    lease_expires_at = ${sqlLiteral(v.leaseExpiresAt)}, claimed_at = ${now}, updated_at = ${now}
  FROM candidates WHERE runs.id = candidates.id AND runs.status = '${RUN_STATUS.queued}'
  RETURNING ${RUN_COLUMNS}
), event AS (
  INSERT INTO run_events (run_id, type, from_status, to_status, data, created_at)
  SELECT id, '${RUN_EVENT.claimed}', '${RUN_STATUS.queued}', status, '{"attempt":' || attempts || '}', ${now} FROM claimed ORDER BY run_at, id
  RETURNING ${EVENT_COLUMNS}
)
SELECT claimed.*, ${EVENT_SELECT} FROM claimed JOIN event ON event.run_id = claimed.id ORDER BY claimed.run_at, claimed.id`,
  ];
}

/**
 * $1 run id, $2 lease token, $3 workspace id, $4 now. The lease check is the UPDATE's own
 * condition (fenced: a stale holder's token matches nothing). No row: the lease is lost.
 */
const MARK_RUNNING = `WITH started AS (
  UPDATE runs SET status = '${RUN_STATUS.running}', workspace_id = $3, lease_token = NULL, lease_expires_at = NULL,
    started_at = $4, updated_at = $4
  WHERE id = $1 AND status = '${RUN_STATUS.provisioning}' AND lease_token = $2
  RETURNING ${RUN_COLUMNS}
), event AS (
  INSERT INTO run_events (run_id, type, from_status, to_status, data, created_at)
  SELECT id, '${RUN_EVENT.started}', '${RUN_STATUS.provisioning}', status,
    '{"workspace":' || COALESCE(to_json(workspace_name)::text, 'null') || '}', $4 FROM started
  RETURNING ${EVENT_COLUMNS}
)
SELECT started.*, ${EVENT_SELECT} FROM started JOIN event ON event.run_id = started.id`;

/**
 * $1 run id, $2 final status, $3 exit code, $4 summary, $5 usage, $6 cost, $7 duration, $8 last
 * error (null keeps the run's), $9 now, $10 event type, $11 event data.
 *
 * The run is locked first (`prev`), so a concurrent cancel or callback waits and then sees this
 * one's result; a locked row is returned as last committed, and the UPDATE of the same row
 * follows it. It ends only a live run without a pending follow-up (that one also queues a run:
 * engine.ts does it step by step); `prev_status` tells the caller which case it met.
 */
const complete = (to: RunStatus) => `WITH prev AS (
  SELECT id, status, followup FROM runs WHERE id = $1 FOR UPDATE
), done AS (
  UPDATE runs SET status = $2, exit_code = $3::integer, summary = $4, usage = $5, cost_usd = $6::double precision,
    duration_ms = $7::bigint, last_error = COALESCE($8, runs.last_error), lease_token = NULL, lease_expires_at = NULL,
    finished_at = $9, updated_at = $9
  FROM prev WHERE runs.id = prev.id AND prev.status IN (${list(sourcesOf(to))}) AND prev.followup = 0
  RETURNING ${RUN_COLUMNS}, prev.status AS from_status
), event AS (
  INSERT INTO run_events (run_id, type, from_status, to_status, data, created_at)
  SELECT id, $10, from_status, status, $11, $9 FROM done
  RETURNING ${EVENT_COLUMNS}
), teardown AS (
  INSERT INTO teardowns (run_id, workspace_name, status, attempts, next_attempt_at, created_at, updated_at)
  SELECT id, workspace_name, 'pending', 0, $9, $9, $9 FROM done WHERE workspace_name IS NOT NULL
  ON CONFLICT (workspace_name) WHERE status = 'pending' DO NOTHING
)
SELECT prev.status AS prev_status, done.*, ${EVENT_SELECT}
FROM prev LEFT JOIN done ON true LEFT JOIN event ON event.run_id = done.id`;

/** `prev_status` null: no such run. Run and event columns null: the statement changed nothing. */
export type CompleteRow = { prev_status: string | null } & { [K in keyof WrittenRow]: WrittenRow[K] | null };

export type PostgresStatements = ReturnType<typeof preparePostgresStatements>;

/** Prepares the statements on `store` (PostgreSQL only). */
export function preparePostgresStatements(store: Store) {
  return {
    enqueue: store.prepare<{ id: number; event_id: number }>(ENQUEUE),
    claimLock: store.prepare<{ paused: number }>(CLAIM_LOCK),
    claim: store.prepare<WrittenRow>(CLAIM),
    markRunning: store.prepare<WrittenRow>(MARK_RUNNING),
    complete: {
      [RUN_STATUS.succeeded]: store.prepare<CompleteRow>(complete(RUN_STATUS.succeeded)),
      [RUN_STATUS.failed]: store.prepare<CompleteRow>(complete(RUN_STATUS.failed)),
      [RUN_STATUS.timedOut]: store.prepare<CompleteRow>(complete(RUN_STATUS.timedOut)),
    } as Partial<Record<RunStatus, PreparedStatement<CompleteRow>>>,
  };
}
