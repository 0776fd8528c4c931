import { isUniqueViolation, type TransactionScope } from '../store/index.js';
import { forgetTokens } from './callback-tokens.js';
import { forgetTurns } from './conversation.js';
import { write, type EngineContext } from './engine-context.js';
import { TransitionError } from './errors.js';
import { finish, requireRun } from './finish.js';
import { toRun } from './rows.js';
import { canTransition, isFinal, LIVE_STATUSES, RUN_EVENT, RUN_STATUS } from './states.js';
import { recordTransition } from './transition.js';
import type { Run } from './types.js';

/** A live run → cancelled (its follow-up dropped), in the caller's transaction. */
export async function cancelInTransaction(
  scope: TransactionScope,
  ctx: EngineContext,
  runId: number,
  reason = 'cancelled by operator',
): Promise<Run> {
  const run = await requireRun(scope, ctx, runId);
  if (!canTransition(run.status, RUN_STATUS.cancelled)) {
    throw new TransitionError(`run ${runId} is already ${run.status}; only live runs can be cancelled`, 'conflict');
  }
  return finish(scope, ctx, run, RUN_STATUS.cancelled, { last_error: reason, followup: 0 }, { reason }, false);
}

/**
 * `retry` inside the caller's transaction; a live run of the same key is a `conflict`
 * TransitionError, found before anything is written.
 */
export async function retryIn(scope: TransactionScope, ctx: EngineContext, runId: number): Promise<Run> {
  const run = await requireRun(scope, ctx, runId);
  // Checked first: a unique violation would abort the caller's whole transaction on PostgreSQL.
  const live = await scope.trx
    .selectFrom('runs')
    .select('id')
    .where('key', '=', run.key)
    .where('status', 'in', [...LIVE_STATUSES])
    .executeTakeFirst();
  if (live) throw new TransitionError(`run ${runId} cannot be retried: run ${live.id} for the same stage and issue is live`, 'conflict');
  return retryInTransaction(scope, ctx, run);
}

/** failed | dead | timed_out | cancelled → queued in a transaction of its own; a live run of the same key is a `conflict`. */
export async function retryRun(ctx: EngineContext, runId: number): Promise<Run> {
  try {
    return await write(ctx, async (scope) => retryInTransaction(scope, ctx, await requireRun(scope, ctx, runId)));
  } catch (err) {
    if (isUniqueViolation(err)) {
      throw new TransitionError(`run ${runId} cannot be retried: another run for the same stage and issue is live`, 'conflict', {
        cause: err,
      });
    }
    throw err;
  }
}

/** failed | dead | timed_out | cancelled → queued, attempts reset. */
async function retryInTransaction(scope: TransactionScope, ctx: EngineContext, run: Run): Promise<Run> {
  const runId = run.id;
  if (!isFinal(run.status) || !canTransition(run.status, RUN_STATUS.queued)) {
    throw new TransitionError(`run ${runId} is ${run.status}; only failed, dead, timed_out or cancelled runs can be retried`, 'conflict');
  }
  const t = ctx.now();
  // A run that was a conversation starts afresh, from its stage prompt (conversation.ts forgetTurns).
  const payload = { ...run.payload };
  delete payload.resume;
  await forgetTurns(scope.trx, runId, t);
  const row = await scope.trx
    .updateTable('runs')
    .set({
      status: RUN_STATUS.queued,
      attempts: 0,
      agent_attempt: 1,
      payload: JSON.stringify(payload),
      run_at: t,
      finished_at: null,
      claimed_at: null,
      started_at: null,
      workspace_id: null,
      workspace_name: null,
      callback_token_hash: null,
      exit_code: null,
      summary: null,
      updated_at: t,
    })
    .where('id', '=', runId)
    .returningAll()
    .executeTakeFirstOrThrow();
  const queued = toRun(row);
  await forgetTokens(scope.trx, runId);
  await recordTransition(scope, ctx, queued, run.status, RUN_EVENT.requeued, { reason: 'retry requested' });
  return queued;
}
