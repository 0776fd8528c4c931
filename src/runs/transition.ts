import { sql, type Kysely } from 'kysely';
import type { Database, StoreDialect } from '../store/index.js';
import { toRun, toRunEvent } from './rows.js';
import type { RunStatus } from './states.js';
import type { Run, RunEvent, TransitionHook } from './types.js';

/** Events written inside a transaction, announced to subscribers once it commits. */
export type Committed = Array<{ event: RunEvent; run: Run }>;

export interface TransitionContext {
  now: () => number;
  hooks: readonly TransitionHook[];
}

/**
 * Appends the run_events row for `run` (already updated in `trx`) and lets the hooks add their own
 * rows (outbox) in the same transaction. `change` is the transition that happened (`from` is null
 * for a new run), or null for an event that changes no state (coalesced, progress).
 */
export async function recordEvent(
  trx: Kysely<Database>,
  ctx: TransitionContext,
  committed: Committed,
  run: Run,
  type: string,
  change: { from: RunStatus | null } | null,
  data: Record<string, unknown> | null = null,
): Promise<RunEvent> {
  const row = await trx
    .insertInto('run_events')
    .values({
      run_id: run.id,
      type,
      from_status: change ? change.from : null,
      to_status: change ? run.status : null,
      data: data ? JSON.stringify(data) : null,
      created_at: ctx.now(),
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  const event = toRunEvent(row);
  for (const hook of ctx.hooks) await hook(trx, { run, event });
  committed.push({ event, run });
  return event;
}

/**
 * Reads a run; with `lock` on PostgreSQL the row stays locked until the transaction ends, so two
 * concurrent transitions of one run (a callback and a cancel) happen one after the other. SQLite
 * needs no lock: its IMMEDIATE transactions already run one at a time.
 */
/**
 * The same as one `recordEvent` per run, in a single INSERT: a claim of a batch of runs writes all
 * its `run:claimed` rows in one round trip.
 */
export async function recordEvents(
  trx: Kysely<Database>,
  ctx: TransitionContext,
  committed: Committed,
  entries: ReadonlyArray<{ run: Run; type: string; from: RunStatus | null; data: Record<string, unknown> | null }>,
): Promise<void> {
  if (entries.length === 0) return;
  const createdAt = ctx.now();
  const rows = await trx
    .insertInto('run_events')
    .values(
      entries.map((e) => ({
        run_id: e.run.id,
        type: e.type,
        from_status: e.from,
        to_status: e.run.status,
        data: e.data ? JSON.stringify(e.data) : null,
        created_at: createdAt,
      })),
    )
    .returningAll()
    .execute();
  // RETURNING order is not guaranteed to follow VALUES order; ids do.
  rows.sort((a, b) => a.id - b.id);
  const byRun = new Map(entries.map((e) => [e.run.id, e.run]));
  for (const row of rows) {
    const event = toRunEvent(row);
    const run = byRun.get(event.runId)!;
    for (const hook of ctx.hooks) await hook(trx, { run, event });
    committed.push({ event, run });
  }
}

export async function selectRun(trx: Kysely<Database>, id: number, lock?: StoreDialect): Promise<Run | null> {
  let query = trx.selectFrom('runs').selectAll().where('id', '=', id);
  if (lock === 'postgres') query = query.forUpdate();
  const row = await query.executeTakeFirst();
  return row ? toRun(row) : null;
}

/** Queues the workspace's removal in the same transaction as the run's end, so none is forgotten. */
export async function scheduleTeardown(
  trx: Kysely<Database>,
  run: Pick<Run, 'workspaceName'> & { id: number | null },
  now: number,
): Promise<void> {
  if (!run.workspaceName) return;
  await trx
    .insertInto('teardowns')
    .values({
      run_id: run.id,
      workspace_name: run.workspaceName,
      status: 'pending',
      attempts: 0,
      next_attempt_at: now,
      lease_token: null,
      lease_expires_at: null,
      last_error: null,
      created_at: now,
      updated_at: now,
    })
    // A literal predicate: PostgreSQL matches a partial unique index only against constants.
    .onConflict((oc) =>
      oc
        .column('workspace_name')
        .where(sql<boolean>`status = 'pending'`)
        .doNothing(),
    )
    .execute();
}
