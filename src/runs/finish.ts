import type { TransactionScope } from '../store/index.js';
import type { EngineContext } from './engine-context.js';
import { enqueueInTransaction } from './enqueue.js';
import { IllegalTransitionError, LeaseLostError, TransitionError } from './errors.js';
import { toRun, type RunPatch } from './rows.js';
import { canTransition, FINAL_EVENT, RUN_STATUS, type FinalStatus } from './states.js';
import { recordTransition, scheduleTeardown, selectRun } from './transition.js';
import type { Run } from './types.js';

/**
 * Ends a run: `to` with the typed `patch`, its event, the teardown of its workspace, and the
 * follow-up run a duplicate asked for.
 */
export async function finish(
  scope: TransactionScope,
  ctx: EngineContext,
  run: Run,
  to: FinalStatus,
  patch: RunPatch,
  data: Record<string, unknown> | null,
  keepFollowup = true,
): Promise<Run> {
  // Checked before the write too, so the error names the run's state as it was read.
  if (!canTransition(run.status, to)) throw new IllegalTransitionError(run.id, run.status, to);
  const t = ctx.now();
  const row = await scope.trx
    .updateTable('runs')
    .set({ ...patch, status: to, lease_token: null, lease_expires_at: null, finished_at: t, updated_at: t })
    .where('id', '=', run.id)
    .returningAll()
    .executeTakeFirstOrThrow();
  const finished = toRun(row);
  await recordTransition(scope, ctx, finished, run.status, FINAL_EVENT[to], data);
  await scheduleTeardown(scope, ctx, finished, t);
  if (keepFollowup && run.followup) {
    const followupPayload = row.followup_payload ? (JSON.parse(row.followup_payload) as Run['payload']) : run.payload;
    await enqueueInTransaction(scope, ctx, {
      stage: run.stage,
      owner: run.owner,
      repo: run.repo,
      number: run.number ?? undefined,
      key: run.key,
      payload: { ...followupPayload, followupOf: run.id },
      maxAttempts: run.maxAttempts,
    });
  }
  return finished;
}

/** Back to the queue from provisioning (a failed attempt, an expired lease), due at `runAt`. */
export async function requeue(scope: TransactionScope, ctx: EngineContext, run: Run, runAt: number, lastError: string): Promise<Run> {
  const row = await scope.trx
    .updateTable('runs')
    .set({
      status: RUN_STATUS.queued,
      last_error: lastError,
      run_at: runAt,
      lease_token: null,
      lease_expires_at: null,
      updated_at: ctx.now(),
    })
    .where('id', '=', run.id)
    .returningAll()
    .executeTakeFirstOrThrow();
  return toRun(row);
}

/** The provisioning run `leaseToken` holds, locked on PostgreSQL; LeaseLostError otherwise. */
export async function requireLease(scope: TransactionScope, ctx: EngineContext, runId: number, leaseToken: string): Promise<Run> {
  let query = scope.trx.selectFrom('runs').selectAll().where('id', '=', runId);
  if (ctx.store.dialect === 'postgres') query = query.forUpdate();
  const row = await query.executeTakeFirst();
  if (!row || row.status !== RUN_STATUS.provisioning || row.lease_token !== leaseToken) throw new LeaseLostError(runId);
  return toRun(row);
}

/** The run, locked on PostgreSQL; a `not_found` TransitionError when there is none. */
export async function requireRun(scope: TransactionScope, ctx: EngineContext, runId: number): Promise<Run> {
  const run = await selectRun(scope.trx, runId, ctx.store.dialect);
  if (!run) throw new TransitionError(`run ${runId} does not exist`, 'not_found');
  return run;
}
