import type { TransactionScope } from '../store/index.js';
import { write, type EngineContext } from './engine-context.js';
import { runKey } from './keys.js';
import { enqueueValues, toEnqueued } from './postgres-statements.js';
import { toRun } from './rows.js';
import { insertRunValues, queuedRunRow, type QueuedRunValues, type RunStatements } from './run-statements.js';
import { LIVE_STATUSES, RUN_EVENT, RUN_STATUS } from './states.js';
import { recordEvent, recordTransition, type TransitionContext } from './transition.js';
import type { EnqueueResult, TaskRequest } from './types.js';
import { writeStatement } from './write-statement.js';

/** What enqueuing `request` writes (the PostgreSQL one-statement `ENQUEUE` and `INSERT_RUN` alike). */
export function queuedRunValues(
  ctx: Pick<TransitionContext, 'now'> & { defaultMaxAttempts: number },
  request: TaskRequest,
): QueuedRunValues {
  const now = ctx.now();
  const trigger = request.payload?.trigger;
  return {
    key: runKey(request),
    stage: request.stage,
    owner: request.owner,
    repo: request.repo,
    number: request.number ?? null,
    payload: JSON.stringify(request.payload ?? {}),
    maxAttempts: request.maxAttempts ?? ctx.defaultMaxAttempts,
    runAt: now + Math.max(0, request.delayMs ?? 0),
    now,
    eventData: trigger ? JSON.stringify({ trigger }) : null,
  };
}

/**
 * Inserts a queued run unless one with the same key is live; the unique index on live keys decides
 * (no read-then-write race). Returns null when the live run finished between the insert and the
 * look-up, in which case the caller simply tries again.
 */
export async function enqueueInTransaction(
  scope: TransactionScope,
  ctx: TransitionContext & { defaultMaxAttempts: number; statements: Pick<RunStatements, 'insertRun' | 'insertEvent'> },
  request: TaskRequest,
): Promise<EnqueueResult | null> {
  const { trx } = scope;
  const values = queuedRunValues(ctx, request);
  const { key, now, payload } = values;
  const [inserted] = await ctx.statements.insertRun.execute(trx, insertRunValues(values));
  if (inserted) {
    const run = queuedRunRow(inserted.id, values);
    await recordTransition(scope, ctx, run, null, RUN_EVENT.queued, request.payload?.trigger ? { trigger: request.payload.trigger } : null);
    return { outcome: 'queued', run };
  }

  const liveRow = await trx.selectFrom('runs').selectAll().where('key', '=', key).where('status', 'in', LIVE_STATUSES).executeTakeFirst();
  if (!liveRow) return null;
  const live = toRun(liveRow);
  // A held run is a queued one waiting for its budget: a duplicate merges into it the same way.
  if (live.status === RUN_STATUS.queued || live.status === RUN_STATUS.held) {
    await recordEvent(scope, ctx, live, RUN_EVENT.coalesced, request.payload?.trigger ? { trigger: request.payload.trigger } : null);
    return { outcome: 'coalesced', run: live };
  }
  if (request.onDuplicate === 'drop') return { outcome: 'dropped', run: live };
  // A follow-up re-runs the live run's own repository and issue: its payload may come only from a
  // request about the same one. Keys name the repository (keys.ts), so only a caller's own `key`
  // could break this; refuse rather than let one repository's event steer another's run.
  if (live.owner !== request.owner || live.repo !== request.repo || (live.number ?? undefined) !== request.number) {
    throw new Error(
      `run key ${key} belongs to ${live.owner}/${live.repo}${live.number != null ? `#${live.number}` : ''}, not to ${request.owner}/${request.repo}${request.number !== undefined ? `#${request.number}` : ''}`,
    );
  }
  if (!live.followup) {
    const updated = await trx
      .updateTable('runs')
      .set({ followup: 1, followup_payload: payload, updated_at: now })
      .where('id', '=', live.id)
      .returningAll()
      .executeTakeFirstOrThrow();
    const run = toRun(updated);
    await recordEvent(scope, ctx, run, RUN_EVENT.followup);
    return { outcome: 'followup', run };
  }
  return { outcome: 'followup', run: live };
}

/**
 * Enqueues in a transaction of its own; on PostgreSQL, when no live run holds the key, as one
 * statement (postgres-statements.ts `ENQUEUE`).
 */
export async function enqueueRun(ctx: EngineContext, request: TaskRequest): Promise<EnqueueResult> {
  const statements = ctx.postgres;
  for (;;) {
    const slow = (scope: TransactionScope) => enqueueInTransaction(scope, ctx, request);
    let result: EnqueueResult | null;
    if (statements) {
      const values = queuedRunValues(ctx, request);
      result = await writeStatement(
        ctx,
        RUN_EVENT.queued,
        statements.enqueue,
        enqueueValues(values),
        ([row]) => {
          // No row: a live run holds the key; the step-by-step path coalesces or follows up.
          if (!row) return undefined;
          const written = toEnqueued(row, values);
          return { result: { outcome: 'queued', run: written.run } as EnqueueResult, written: [written] };
        },
        slow,
      );
    } else {
      result = await write(ctx, slow);
    }
    if (result) return result;
  }
}

/** Enqueues inside the caller's transaction, trying again when the live run holding the key finished meanwhile. */
export async function enqueueInScope(scope: TransactionScope, ctx: EngineContext, request: TaskRequest): Promise<EnqueueResult> {
  for (;;) {
    // Null: the live run holding the key finished between the insert and the look-up; the
    // next try inserts (PostgreSQL's READ COMMITTED sees the finished run's commit).
    const result = await enqueueInTransaction(scope, ctx, request);
    if (result) return result;
  }
}

/** Records a cron slot and enqueues its runs in one transaction; false when the slot already fired (here or on another replica). */
export function fireSchedule(ctx: EngineContext, name: string, slot: number, requests: readonly TaskRequest[]): Promise<boolean> {
  return write(ctx, async (scope) => {
    const fired = await scope.trx
      .insertInto('schedule_fires')
      .values({ name, slot, run_id: null, created_at: ctx.now() })
      .onConflict((oc) => oc.columns(['name', 'slot']).doNothing())
      .returning('name')
      .executeTakeFirst();
    if (!fired) return false;
    for (const request of requests) await enqueueInTransaction(scope, ctx, request);
    return true;
  });
}
