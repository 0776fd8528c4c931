/**
 * The two inserts every transition makes, as fixed SQL for both dialects (`Store.prepare`): a new
 * queued run and one `run_events` row. They return only the new `id`; the caller knows every other
 * value it wrote, and builds the row from them (`queuedRunRow`, `insertedEvent`) instead of
 * reading 38 columns back. On SQLite, where the database works in-process, building these queries
 * through Kysely and reading whole rows back cost more than SQLite's own work (bench/README.md).
 *
 * Written with `?` placeholders; PostgreSQL gets them numbered at preparation (`Store.prepare`).
 */
import type { PreparedStatement, Store } from '../store/index.js';
import { parseJson, toRun, type RunRow } from './rows.js';
import { INITIAL_STATUS, LIVE_STATUSES } from './states.js';
import type { Run, RunEvent } from './types.js';
import type { RunEventType, RunStatus } from './states.js';

/** Literal statuses: PostgreSQL infers a partial unique index for `ON CONFLICT` only from constants. */
export const LIVE_LIST = LIVE_STATUSES.map((s) => `'${s}'`).join(', ');

/** What an enqueue writes; `payload` and `eventData` are JSON text. */
export interface QueuedRunValues {
  key: string;
  stage: string;
  owner: string;
  repo: string;
  number: number | null;
  payload: string;
  maxAttempts: number;
  runAt: number;
  now: number;
  /** The `run:queued` event's data. */
  eventData: string | null;
}

/** No row when a live run holds the key (enqueue.ts then coalesces or follows up). */
const INSERT_RUN = `INSERT INTO runs (key, stage, owner, repo, number, status, payload, attempts, max_attempts, run_at, followup, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, '${INITIAL_STATUS}', ?, 0, ?, ?, 0, ?, ?)
ON CONFLICT (key) WHERE status IN (${LIVE_LIST}) DO NOTHING
RETURNING id`;

const INSERT_EVENT = `INSERT INTO run_events (run_id, type, from_status, to_status, data, created_at) VALUES (?, ?, ?, ?, ?, ?) RETURNING id`;

export function insertRunValues(v: QueuedRunValues): unknown[] {
  return [v.key, v.stage, v.owner, v.repo, v.number, v.payload, v.maxAttempts, v.runAt, v.now, v.now];
}

export interface EventValues {
  runId: number;
  type: RunEventType;
  from: RunStatus | null;
  to: RunStatus | null;
  /** JSON text. */
  data: string | null;
  createdAt: number;
}

export function insertEventValues(e: EventValues): unknown[] {
  return [e.runId, e.type, e.from, e.to, e.data, e.createdAt];
}

export type RunStatements = ReturnType<typeof prepareRunStatements>;

export function prepareRunStatements(store: Pick<Store, 'prepare'>) {
  return {
    insertRun: store.prepare<{ id: number }>(INSERT_RUN),
    insertEvent: store.prepare<{ id: number }>(INSERT_EVENT),
  } satisfies Record<string, PreparedStatement<{ id: number }>>;
}

/**
 * The row `INSERT_RUN` (and postgres-statements.ts' `ENQUEUE`) wrote: the values given, the
 * table's defaults for the rest. `satisfies` makes a column added to `RunsTable` a compile error
 * here, and run-engine.test.ts compares the result with the row as read back.
 */
export function queuedRunRow(id: number, v: QueuedRunValues): Run {
  const row = {
    id,
    key: v.key,
    stage: v.stage,
    owner: v.owner,
    repo: v.repo,
    number: v.number,
    status: INITIAL_STATUS,
    payload: v.payload,
    attempts: 0,
    max_attempts: v.maxAttempts,
    run_at: v.runAt,
    lease_token: null,
    lease_expires_at: null,
    workspace_name: null,
    workspace_id: null,
    callback_token_hash: null,
    followup: 0,
    followup_payload: null,
    last_error: null,
    exit_code: null,
    summary: null,
    usage: null,
    cost_usd: null,
    cost_source: null,
    duration_ms: null,
    created_at: v.now,
    updated_at: v.now,
    claimed_at: null,
    started_at: null,
    finished_at: null,
    token_cap: null,
    max_duration_ms: null,
    held_reason: null,
    agent_attempt: 1,
  } satisfies Record<keyof RunRow, unknown>;
  return toRun(row);
}

/** The event `INSERT_EVENT` wrote, as `toRunEvent` would read it back. */
export function insertedEvent(id: number, e: EventValues): RunEvent {
  return { id, runId: e.runId, type: e.type, fromStatus: e.from, toStatus: e.to, data: parseJson(e.data), createdAt: e.createdAt };
}
