import { sql, type Kysely } from 'kysely';
import type { Database } from '../store/index.js';
import { runKey } from './keys.js';
import { toRun } from './rows.js';
import { LIVE_STATUSES } from './states.js';
import { recordEvent, type Committed, type TransitionContext } from './transition.js';
import type { EnqueueResult, TaskRequest } from './types.js';

/** Literal, not parameters: PostgreSQL infers a partial unique index only from constants. */
const LIVE_PREDICATE = sql<boolean>`status IN ('queued', 'provisioning', 'running')`;

/**
 * Inserts a queued run unless one with the same key is live; the unique index on live keys decides
 * (no read-then-write race). Returns null when the live run finished between the insert and the
 * look-up, in which case the caller simply tries again.
 */
export async function enqueueInTransaction(
  trx: Kysely<Database>,
  ctx: TransitionContext & { defaultMaxAttempts: number },
  committed: Committed,
  request: TaskRequest,
): Promise<EnqueueResult | null> {
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
      status: 'queued',
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
    await recordEvent(
      trx,
      ctx,
      committed,
      run,
      'run:queued',
      { from: null },
      request.payload?.trigger ? { trigger: request.payload.trigger } : null,
    );
    return { outcome: 'queued', run };
  }

  const liveRow = await trx.selectFrom('runs').selectAll().where('key', '=', key).where('status', 'in', LIVE_STATUSES).executeTakeFirst();
  if (!liveRow) return null;
  const live = toRun(liveRow);
  if (live.status === 'queued') {
    await recordEvent(
      trx,
      ctx,
      committed,
      live,
      'run:coalesced',
      null,
      request.payload?.trigger ? { trigger: request.payload.trigger } : null,
    );
    return { outcome: 'coalesced', run: live };
  }
  if (request.onDuplicate === 'drop') return { outcome: 'dropped', run: live };
  if (!live.followup) {
    const updated = await trx
      .updateTable('runs')
      .set({ followup: 1, followup_payload: payload, updated_at: now })
      .where('id', '=', live.id)
      .returningAll()
      .executeTakeFirstOrThrow();
    const run = toRun(updated);
    await recordEvent(trx, ctx, committed, run, 'run:followup', null);
    return { outcome: 'followup', run };
  }
  return { outcome: 'followup', run: live };
}
