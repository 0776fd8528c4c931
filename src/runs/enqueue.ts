import { sql } from 'kysely';
import type { TransactionScope } from '../store/index.js';
import { runKey } from './keys.js';
import { toRun } from './rows.js';
import { INITIAL_STATUS, LIVE_STATUSES, RUN_EVENT } from './states.js';
import { recordEvent, recordTransition, type TransitionContext } from './transition.js';
import type { EnqueueResult, TaskRequest } from './types.js';

/**
 * Literal, not parameters: PostgreSQL infers a partial unique index only from constants. The
 * statuses are this module's own constants, never input, so splicing them in is safe.
 */
const LIVE_PREDICATE = sql<boolean>`status IN (${sql.raw(LIVE_STATUSES.map((s) => `'${s}'`).join(', '))})`;

/** The parameters of the PostgreSQL statement that enqueues `request` (`ENQUEUE` in postgres-statements.ts). */
export function enqueueParameters(ctx: Pick<TransitionContext, 'now'> & { defaultMaxAttempts: number }, request: TaskRequest): unknown[] {
  const now = ctx.now();
  const trigger = request.payload?.trigger;
  return [
    runKey(request),
    request.stage,
    request.owner,
    request.repo,
    request.number ?? null,
    JSON.stringify(request.payload ?? {}),
    request.maxAttempts ?? ctx.defaultMaxAttempts,
    now + Math.max(0, request.delayMs ?? 0),
    now,
    trigger ? JSON.stringify({ trigger }) : null,
  ];
}

/**
 * Inserts a queued run unless one with the same key is live; the unique index on live keys decides
 * (no read-then-write race). Returns null when the live run finished between the insert and the
 * look-up, in which case the caller simply tries again.
 */
export async function enqueueInTransaction(
  scope: TransactionScope,
  ctx: TransitionContext & { defaultMaxAttempts: number },
  request: TaskRequest,
): Promise<EnqueueResult | null> {
  const { trx } = scope;
  const now = ctx.now();
  const key = runKey(request);
  const payload = JSON.stringify(request.payload ?? {});
  const inserted = await trx
    .insertInto('runs')
    .values({
      key,
      stage: request.stage,
      owner: request.owner,
      repo: request.repo,
      number: request.number ?? null,
      status: INITIAL_STATUS,
      payload,
      attempts: 0,
      max_attempts: request.maxAttempts ?? ctx.defaultMaxAttempts,
      run_at: now + Math.max(0, request.delayMs ?? 0),
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
      duration_ms: null,
      created_at: now,
      updated_at: now,
      claimed_at: null,
      started_at: null,
      finished_at: null,
    })
    .onConflict((oc) => oc.column('key').where(LIVE_PREDICATE).doNothing())
    .returningAll()
    .executeTakeFirst();
  if (inserted) {
    const run = toRun(inserted);
    await recordTransition(scope, ctx, run, null, RUN_EVENT.queued, request.payload?.trigger ? { trigger: request.payload.trigger } : null);
    return { outcome: 'queued', run };
  }

  const liveRow = await trx.selectFrom('runs').selectAll().where('key', '=', key).where('status', 'in', LIVE_STATUSES).executeTakeFirst();
  if (!liveRow) return null;
  const live = toRun(liveRow);
  if (live.status === 'queued') {
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
