import { sql, type Kysely } from 'kysely';
import type { Database, EffectScope, StoreDialect, TransactionScope } from '../store/index.js';
import { IllegalTransitionError } from './errors.js';
import { toRun } from './rows.js';
import { insertedEvent, insertEventValues, type EventValues, type RunStatements } from './run-statements.js';
import { bringsWork, canTransition, wakesDispatcher, type RunEventType, type RunStatus } from './states.js';
import type { Run, RunEvent, TransitionHook } from './types.js';

/** What every write of the engine needs: the clock, the hooks, and the after-commit signals. */
export interface TransitionContext {
  now: () => number;
  hooks: readonly TransitionHook[];
  /** Registers what a committed event announces (local listeners, other replicas). */
  announce(scope: EffectScope, event: RunEvent, run: Run): void;
  /**
   * Registers a wake-up of the dispatchers for after the commit: this process's, and with
   * `replicas` the other replicas' too (new work; a freed slot is this process's to fill).
   */
  wake(scope: EffectScope, replicas: boolean): void;
  /** Registers a wake-up of the teardown worker for after the commit. */
  teardownQueued(scope: EffectScope): void;
  /** The prepared inserts (the engine's); without them the query builder writes the same rows. */
  statements?: Pick<RunStatements, 'insertEvent'>;
}

type EventData = Record<string, unknown> | null;

/** A hook that is called only for events of the given types (see `TransitionHook.events`). */
export function hookFor(
  events: Iterable<RunEventType>,
  hook: (scope: TransactionScope, change: { run: Run; event: RunEvent }) => Promise<void>,
): TransitionHook {
  return Object.assign(hook, { events: new Set(events) });
}

/** Whether `hook` is called for an event of `type`. */
export function hookActsOn(hook: TransitionHook, type: RunEventType): boolean {
  return !hook.events || hook.events.has(type);
}

async function callHooks(scope: TransactionScope, hooks: readonly TransitionHook[], run: Run, event: RunEvent): Promise<void> {
  for (const hook of hooks) if (hookActsOn(hook, event.type)) await hook(scope, { run, event });
}

/**
 * The one way a run's status changes on record: checks `from → run.status` against
 * `TRANSITIONS` (an illegal one throws and rolls the caller's transaction back), appends the
 * `run_events` row, lets the hooks add theirs (outbox) in the same transaction, and registers the
 * after-commit signals. `run` is the row as the caller's UPDATE left it; `from` is null for a new
 * run.
 */
export async function recordTransition(
  scope: TransactionScope,
  ctx: TransitionContext,
  run: Run,
  from: RunStatus | null,
  type: RunEventType,
  data: EventData = null,
): Promise<RunEvent> {
  const [event] = await recordTransitions(scope, ctx, [{ run, from, type, data }]);
  return event!;
}

/**
 * `recordTransition` for a batch, in a single INSERT: a claim of many runs writes all its
 * `run:claimed` rows in one round trip.
 */
export async function recordTransitions(
  scope: TransactionScope,
  ctx: TransitionContext,
  entries: ReadonlyArray<{ run: Run; from: RunStatus | null; type: RunEventType; data: EventData }>,
): Promise<RunEvent[]> {
  for (const { run, from } of entries) {
    if (!canTransition(from, run.status)) throw new IllegalTransitionError(run.id, from, run.status);
  }
  const events = await insertEvents(
    scope,
    ctx,
    entries.map((e) => ({ run: e.run, type: e.type, from: e.from, to: e.run.status, data: e.data })),
  );
  wakeFor(
    scope,
    ctx,
    entries.map((e) => ({ from: e.from, to: e.run.status })),
  );
  return events;
}

/** Registers the dispatchers' wake-up that `changes` call for, if any (every replica's for new work). */
function wakeFor(scope: EffectScope, ctx: TransitionContext, changes: ReadonlyArray<{ from: RunStatus | null; to: RunStatus }>): void {
  if (changes.some(({ from, to }) => wakesDispatcher(from, to)))
    ctx.wake(
      scope,
      changes.some(({ to }) => bringsWork(to)),
    );
}

/** An event that changes no status: a coalesced duplicate, a follow-up request, a progress batch. */
export async function recordEvent(
  scope: TransactionScope,
  ctx: TransitionContext,
  run: Run,
  type: RunEventType,
  data: EventData = null,
): Promise<RunEvent> {
  const [event] = await insertEvents(scope, ctx, [{ run, type, from: null, to: null, data }]);
  return event!;
}

async function insertEvents(
  scope: TransactionScope,
  ctx: TransitionContext,
  entries: ReadonlyArray<{ run: Run; type: RunEventType; from: RunStatus | null; to: RunStatus | null; data: EventData }>,
): Promise<RunEvent[]> {
  if (entries.length === 0) return [];
  const createdAt = ctx.now();
  const values: EventValues[] = entries.map((e) => ({
    runId: e.run.id,
    type: e.type,
    from: e.from,
    to: e.to,
    data: e.data ? JSON.stringify(e.data) : null,
    createdAt,
  }));
  let ids: number[];
  if (values.length === 1 && ctx.statements) {
    ids = (await ctx.statements.insertEvent.execute(scope.trx, insertEventValues(values[0]!))).map((r) => r.id);
  } else {
    const rows = await scope.trx
      .insertInto('run_events')
      .values(
        values.map((v) => ({ run_id: v.runId, type: v.type, from_status: v.from, to_status: v.to, data: v.data, created_at: v.createdAt })),
      )
      .returning('id')
      .execute();
    // RETURNING order is not guaranteed to follow VALUES order, but the ids one INSERT draws
    // increase in VALUES order: sorted, they pair with the entries.
    ids = rows.map((r) => r.id).sort((a, b) => a - b);
  }
  const events = values.map((v, i) => insertedEvent(ids[i]!, v));
  for (const [i, event] of events.entries()) {
    const run = entries[i]!.run;
    await callHooks(scope, ctx.hooks, run, event);
    ctx.announce(scope, event, run);
  }
  return events;
}

/**
 * For runs and events that one statement wrote together (postgres-statements.ts, whose SQL allows
 * only transitions `TRANSITIONS` allows): the hooks, in the transaction that statement ran in.
 */
export async function runHooks(scope: TransactionScope, ctx: TransitionContext, written: ReadonlyArray<{ run: Run; event: RunEvent }>) {
  for (const { run, event } of written) await callHooks(scope, ctx.hooks, run, event);
}

/** …and what `recordTransitions` registers after its INSERT: the announcements and the wake-up. */
export function announceWritten(scope: EffectScope, ctx: TransitionContext, written: ReadonlyArray<{ run: Run; event: RunEvent }>): void {
  for (const { run, event } of written) ctx.announce(scope, event, run);
  wakeFor(
    scope,
    ctx,
    written.map(({ run, event }) => ({ from: event.fromStatus, to: run.status })),
  );
}

/**
 * Reads a run; with `lock` on PostgreSQL the row stays locked until the transaction ends, so two
 * concurrent transitions of one run (a callback and a cancel) happen one after the other. SQLite
 * needs no lock: its IMMEDIATE transactions already run one at a time.
 */
export async function selectRun(trx: Kysely<Database>, id: number, lock?: StoreDialect): Promise<Run | null> {
  let query = trx.selectFrom('runs').selectAll().where('id', '=', id);
  if (lock === 'postgres') query = query.forUpdate();
  const row = await query.executeTakeFirst();
  return row ? toRun(row) : null;
}

/** Queues the workspace's removal in the same transaction as the run's end, so none is forgotten. */
export async function scheduleTeardown(
  scope: TransactionScope,
  ctx: Pick<TransitionContext, 'teardownQueued'>,
  run: Pick<Run, 'workspaceName'> & { id: number | null },
  now: number,
): Promise<void> {
  if (!run.workspaceName) return;
  await scope.trx
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
  ctx.teardownQueued(scope);
}
