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
import type { PreparedStatement, Store } from '../store/index.js';
import { toRun, toRunEvent, type RunEventRow, type RunRow } from './rows.js';
import { insertedEvent, queuedRunRow, type QueuedRunValues } from './run-statements.js';
import { LIVE_STATUSES, RUN_EVENT, RUN_STATUS, TRANSITIONS, type RunStatus } from './states.js';
import type { Run, RunEvent } from './types.js';

const list = (values: readonly string[]) => values.map((v) => `'${v}'`).join(', ');
/** The states a run may reach `to` from, per `TRANSITIONS`: the statements enforce the table too. */
const sourcesOf = (to: RunStatus) => (Object.keys(TRANSITIONS) as RunStatus[]).filter((from) => TRANSITIONS[from].includes(to));

/**
 * A run as a hot statement left it and the event that records the change, each as one JSON
 * column (`row_to_json`): two fields for the driver to read instead of 40, and no column list to
 * keep in step with the table (a prepared statement must not return `*`, see `Store.prepare`, but
 * `json` stays `json` whatever the table holds).
 */
export interface WrittenRow {
  run: RunRow;
  event: RunEventRow;
}

/** A run as a hot statement left it, with the event that records the change. */
export interface Written {
  run: Run;
  event: RunEvent;
}

export function toWritten(row: WrittenRow): Written {
  return { run: toRun(row.run), event: toRunEvent(row.event) };
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
 * Takes the `dispatch_state` lock that serialises claims (see claim.ts) and lets this
 * transaction's COMMIT return before its WAL is flushed, as `CLAIM` does: for a claim that must do
 * more under the lock than `CLAIM` can (hold and release runs for the daily budgets, then `CLAIM`;
 * or pick under a per-repository limit). Bitmap scans are off for the rest of the transaction, for
 * the reason given in `CLAIM`'s function: a count of slots in use must not visit every dead version
 * since the last vacuum.
 */
const CLAIM_LOCK = `SELECT paused, set_config('synchronous_commit', 'off', true) AS commit_mode,
  set_config('enable_bitmapscan', 'off', true) AS slot_count_plan FROM dispatch_state WHERE id = 1 FOR UPDATE`;

/**
 * $1 now, $2 most runs to claim, $3 concurrency, $4 lease token, $5 lease expiry. The whole claim
 * in one round trip: `baton_claim_runs` (migrations 0085 and 0086) takes the lock, reads
 * `paused`, counts the slots in use under the lock and claims the due runs in order by their ids,
 * writing their `run:claimed` events; paused, it claims nothing.
 *
 * Why a claim's COMMIT may skip the WAL flush: claims hold the lock through their COMMIT, so the
 * flush (a few ms on a real disk) would bound how fast anyone can claim. What a database crash can
 * lose is only the last fraction of a second of such claims, never part of one (PostgreSQL's
 * asynchronous commit loses whole transactions, in order, and any later ordinary commit flushes
 * them too). A lost claim is a run back in `queued` whose lease nobody knows: the dispatcher that
 * made it finds the lease gone at its next step, exactly as after an expired lease, and the run is
 * claimed again. Every other transition waits for the flush as usual.
 */
const CLAIM = `SELECT claimed_run AS run, claimed_event AS event FROM baton_claim_runs($1, $2, $3, $4, $5)`;

export function claimValues(v: { now: number; max: number; concurrency: number; leaseToken: string; leaseExpiresAt: number }): unknown[] {
  return [v.now, Math.min(v.max, Number.MAX_SAFE_INTEGER), v.concurrency, v.leaseToken, v.leaseExpiresAt];
}

/**
 * $1 run id, $2 lease token, $3 workspace id, $4 now. The lease check is the UPDATE's own
 * condition (fenced: a stale holder's token matches nothing). No row: the lease is lost.
 */
const MARK_RUNNING = `WITH started AS (
  UPDATE runs SET status = '${RUN_STATUS.running}', workspace_id = $3, lease_token = NULL, lease_expires_at = NULL,
    started_at = $4, updated_at = $4
  WHERE id = $1 AND status = '${RUN_STATUS.provisioning}' AND lease_token = $2
  RETURNING runs.*
), event AS (
  INSERT INTO run_events (run_id, type, from_status, to_status, data, created_at)
  SELECT id, '${RUN_EVENT.started}', '${RUN_STATUS.provisioning}', status,
    '{"workspace":' || COALESCE(to_json(workspace_name)::text, 'null') || '}', $4 FROM started
  RETURNING run_events.*
)
SELECT row_to_json(started) AS run, row_to_json(event) AS event FROM started JOIN event ON event.run_id = started.id`;

/**
 * $1 run id, $2 final status, $3 exit code, $4 summary, $5 usage, $6 cost, $7 duration, $8 last
 * error (null keeps the run's), $9 now, $10 event type, $11 event data, $12 cost source.
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
    cost_source = $12::text, duration_ms = $7::bigint, last_error = COALESCE($8, runs.last_error), lease_token = NULL, lease_expires_at = NULL,
    finished_at = $9, updated_at = $9
  FROM prev WHERE runs.id = prev.id AND prev.status IN (${list(sourcesOf(to))}) AND prev.followup = 0
  RETURNING runs.*
), event AS (
  INSERT INTO run_events (run_id, type, from_status, to_status, data, created_at)
  SELECT done.id, $10, prev.status, done.status, $11, $9 FROM done JOIN prev ON prev.id = done.id
  RETURNING run_events.*
), teardown AS (
  INSERT INTO teardowns (run_id, workspace_name, status, attempts, next_attempt_at, created_at, updated_at)
  SELECT id, workspace_name, 'pending', 0, $9, $9, $9 FROM done WHERE workspace_name IS NOT NULL
  ON CONFLICT (workspace_name) WHERE status = 'pending' DO NOTHING
)
SELECT prev.status AS prev_status, row_to_json(done) AS run, row_to_json(event) AS event
FROM prev LEFT JOIN done ON true LEFT JOIN event ON event.run_id = done.id`;

/** `prev_status` null: no such run. `run` and `event` null: the statement changed nothing. */
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
