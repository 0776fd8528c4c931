import { BACKOFF, backoffDelay } from '../background/index.js';
import type { TransactionScope } from '../store/index.js';
import { write, type EngineContext } from './engine-context.js';
import { TransitionError } from './errors.js';
import { finish, requireRun } from './finish.js';
import { attemptInTurn, isSetupFailure, isTransientFailure } from './retries.js';
import { toWritten } from './postgres-statements.js';
import { toRun, type RunPatch } from './rows.js';
import { canTransition, FINAL_EVENT, isFinal, RUN_EVENT, RUN_STATUS } from './states.js';
import { recordTransition, scheduleTeardown } from './transition.js';
import type { Run, RunOutcome } from './types.js';
import { writeStatement } from './write-statement.js';

/** What a run that did not succeed records as its error. */
export function failureReason(outcome: RunOutcome): string {
  return outcome.error ?? outcome.summary ?? `run ${outcome.status}`;
}

/**
 * provisioning | running → succeeded | failed | timed_out, or back to the queue for another
 * attempt of its agent (retries.ts). On PostgreSQL an end no hook writes for is one statement.
 */
export function completeRun(ctx: EngineContext, runId: number, outcome: RunOutcome): Promise<{ run: Run; changed: boolean }> {
  // A transient failure may be retried: decided step by step, knowing the run's stage and attempt.
  const mayRetry = ctx.retries !== undefined && outcome.status === RUN_STATUS.failed && isTransientFailure(outcome.error);
  const statement = mayRetry ? undefined : ctx.postgres?.complete[outcome.status];
  const slow = (scope: TransactionScope) => completeInTransaction(scope, ctx, runId, outcome);
  if (!statement) return write(ctx, slow);
  return writeStatement(
    ctx,
    FINAL_EVENT[outcome.status],
    statement,
    completeValues(ctx, runId, outcome),
    (rows) => {
      const row = rows[0];
      // Not a live run without a follow-up (or no run at all): the step-by-step path decides.
      if (!row?.run || !row.event) return undefined;
      const written = toWritten({ run: row.run, event: row.event });
      return { result: { run: written.run, changed: true }, written: [written], teardown: written.run.workspaceName !== null };
    },
    slow,
  );
}

/** The values of postgres-statements.ts `COMPLETE`, in its order. */
function completeValues(ctx: EngineContext, runId: number, outcome: RunOutcome): unknown[] {
  const lastError = outcome.status === 'succeeded' ? null : failureReason(outcome);
  return [
    runId,
    outcome.status,
    outcome.exitCode ?? null,
    outcome.summary ?? null,
    outcome.usage ? JSON.stringify(outcome.usage) : null,
    outcome.costUsd ?? null,
    outcome.durationMs ?? null,
    lastError,
    ctx.now(),
    FINAL_EVENT[outcome.status],
    lastError === null ? null : JSON.stringify({ error: lastError }),
    outcome.costUsd !== null && outcome.costUsd !== undefined ? (outcome.costSource ?? 'reported') : null,
  ];
}

/** `completeRun` step by step, in the caller's transaction. Idempotent: a finished run is returned unchanged. */
export async function completeInTransaction(
  scope: TransactionScope,
  ctx: EngineContext,
  runId: number,
  outcome: RunOutcome,
): Promise<{ run: Run; changed: boolean }> {
  const run = await requireRun(scope, ctx, runId);
  if (isFinal(run.status)) return { run, changed: false };
  if (!canTransition(run.status, outcome.status)) {
    throw new TransitionError(`run ${runId} is ${run.status} and has no workspace to report from`, 'conflict');
  }
  const retries = ctx.retries;
  if (retries && outcome.status === RUN_STATUS.failed && isTransientFailure(outcome.error)) {
    const of = retries.attemptsFor(run.stage);
    if (attemptInTurn(run) < of) return { run: await retryAgent(scope, ctx, run, outcome, of), changed: true };
  }
  const lastError = outcome.status === 'succeeded' ? run.lastError : failureReason(outcome);
  const patch: RunPatch = {
    exit_code: outcome.exitCode ?? null,
    summary: outcome.summary ?? null,
    usage: outcome.usage ? JSON.stringify(outcome.usage) : null,
    cost_usd: outcome.costUsd ?? null,
    cost_source: outcome.costUsd !== null && outcome.costUsd !== undefined ? (outcome.costSource ?? 'reported') : null,
    duration_ms: outcome.durationMs ?? null,
    last_error: lastError,
  };
  const data = outcome.status === 'succeeded' ? null : { error: lastError };
  return { run: await finish(scope, ctx, run, outcome.status, patch, data), changed: true };
}

/**
 * A transient failure with attempts left: back to the queue after a backoff, as the next attempt
 * of its agent, in a fresh workspace (the old one is torn down). The attempt's usage goes on its
 * `run:retrying` entry (and into the day's budgets), not on the run, which shows its last
 * attempt's; the issue hears nothing until the run's outcome.
 */
async function retryAgent(scope: TransactionScope, ctx: EngineContext, run: Run, outcome: RunOutcome, of: number): Promise<Run> {
  const t = ctx.now();
  // Before the agent started (a clone the forge refused for now): the queue's pace, a few
  // seconds and doubling, since a forge restart or a freed disk is quick and no API's rate limit
  // is involved.
  const policy = isSetupFailure(outcome.error) ? { baseMs: ctx.queue.backoffBaseMs * 3, maxMs: ctx.queue.backoffMaxMs } : BACKOFF.agentRun;
  const delayMs = backoffDelay(policy, run.agentAttempt, ctx.random);
  const error = failureReason(outcome);
  const row = await scope.trx
    .updateTable('runs')
    .set({
      status: RUN_STATUS.queued,
      agent_attempt: run.agentAttempt + 1,
      // Provisioning attempts count per agent attempt.
      attempts: 0,
      run_at: t + delayMs,
      last_error: error,
      exit_code: outcome.exitCode ?? null,
      summary: outcome.summary ?? null,
      usage: null,
      cost_usd: null,
      cost_source: null,
      duration_ms: null,
      lease_token: null,
      lease_expires_at: null,
      workspace_name: null,
      workspace_id: null,
      callback_token_hash: null,
      claimed_at: null,
      started_at: null,
      updated_at: t,
    })
    .where('id', '=', run.id)
    .returningAll()
    .executeTakeFirstOrThrow();
  await scheduleTeardown(scope, ctx, run, t);
  const queued = toRun(row);
  await recordTransition(scope, ctx, queued, run.status, RUN_EVENT.retrying, {
    agent: true,
    error,
    ...(outcome.summary ? { summary: outcome.summary.slice(0, 2_000) } : {}),
    // Within the turn (a conversation's reply starts a new one).
    attempt: attemptInTurn(run),
    attempts: of,
    delayMs,
    usage: outcome.usage ?? null,
    costUsd: outcome.costUsd ?? null,
  });
  return queued;
}
