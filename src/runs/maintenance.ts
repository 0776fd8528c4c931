import { sql } from 'kysely';
import { DURATION_GRACE_MS } from '../budgets/index.js';
import { write, type EngineContext } from './engine-context.js';
import { withTokenHistory } from './callback-tokens.js';
import { finish, requeue } from './finish.js';
import { toRun } from './rows.js';
import { FINAL_STATUSES, RUN_EVENT, RUN_STATUS } from './states.js';
import { recordTransition } from './transition.js';
import type { Run } from './types.js';

/** The sweeps the sweeper runs on the engine: expired leases, overdue runs, old runs. */
export interface RunMaintenance {
  /** Provisioning runs whose lease expired go back to the queue. Returns how many. */
  reclaimExpiredLeases(): Promise<number>;
  /**
   * Running runs past their duration limit plus `DURATION_GRACE_MS` end `timed_out` (runs claimed
   * without a recorded limit use `fallbackMs`, STALE_WORKSPACE_MINUTES). Returns them.
   */
  timeOutOverdueRuns(fallbackMs: number): Promise<Run[]>;
  /** When the earliest running run passes its limit plus the grace (epoch ms), or null. */
  nextDeadline(fallbackMs: number): Promise<number | null>;
  /** Deletes finished runs (and their events) older than the retention. Returns how many. */
  prune(): Promise<number>;
}

export function createRunMaintenance(ctx: EngineContext): RunMaintenance {
  const { store } = ctx;
  return {
    reclaimExpiredLeases() {
      return write(ctx, async (scope) => {
        const t = ctx.now();
        let expired = scope.trx
          .selectFrom('runs')
          .selectAll()
          .where('status', '=', RUN_STATUS.provisioning)
          .where('lease_expires_at', '<', t);
        // Another sweeper (this replica's or another's) may be at the same rows: skip what it holds.
        if (store.dialect === 'postgres') expired = expired.forUpdate().skipLocked();
        const rows = await expired.execute();
        const reason = 'lease expired while provisioning';
        for (const row of rows) {
          const run = toRun(row);
          if (run.attempts >= run.maxAttempts) {
            await finish(scope, ctx, run, RUN_STATUS.dead, { last_error: reason }, { error: reason });
            continue;
          }
          const queued = await requeue(scope, ctx, run, t, reason);
          await recordTransition(scope, ctx, queued, run.status, RUN_EVENT.requeued, { reason: 'lease expired' });
        }
        return rows.length;
      });
    },

    timeOutOverdueRuns(fallbackMs) {
      return write(ctx, async (scope) => {
        const t = ctx.now();
        let overdue = scope.trx
          .selectFrom('runs')
          .selectAll()
          .where('status', '=', RUN_STATUS.running)
          .where(sql<number>`started_at + coalesce(max_duration_ms, ${fallbackMs}) + ${DURATION_GRACE_MS}`, '<', t);
        if (store.dialect === 'postgres') overdue = overdue.forUpdate().skipLocked();
        const rows = await overdue.execute();
        const timedOut: Run[] = [];
        for (const row of rows) {
          const limit = formatMinutes(row.max_duration_ms ?? fallbackMs);
          const reason =
            row.max_duration_ms === null
              ? `no completion callback within ${limit} (STALE_WORKSPACE_MINUTES)`
              : `no completion callback within the run's ${limit} duration limit`;
          timedOut.push(
            await finish(scope, ctx, toRun(row), RUN_STATUS.timedOut, { last_error: reason }, { error: reason, limit: 'max_duration' }),
          );
        }
        return timedOut;
      });
    },

    async nextDeadline(fallbackMs) {
      const row = await store.db
        .selectFrom('runs')
        .select(sql<number | null>`min(started_at + coalesce(max_duration_ms, ${fallbackMs}))`.as('at'))
        .where('status', '=', RUN_STATUS.running)
        .executeTakeFirst();
      return row?.at === null || row?.at === undefined ? null : Number(row.at) + DURATION_GRACE_MS;
    },

    async prune() {
      const cutoff = ctx.now() - ctx.queue.retentionDays * 24 * 60 * 60_000;
      return store.transaction(async (trx) => {
        const old = trx.selectFrom('runs').select('id').where('status', 'in', FINAL_STATUSES).where('finished_at', '<', cutoff);
        await trx.deleteFrom('run_events').where('run_id', 'in', old).execute();
        await withTokenHistory(trx).deleteFrom('callback_token_history').where('run_id', 'in', old).execute();
        await trx.deleteFrom('teardowns').where('status', '!=', 'pending').where('updated_at', '<', cutoff).execute();
        await trx.deleteFrom('schedule_fires').where('created_at', '<', cutoff).execute();
        const result = await trx
          .deleteFrom('runs')
          .where('status', 'in', FINAL_STATUSES)
          .where('finished_at', '<', cutoff)
          .executeTakeFirst();
        return Number(result.numDeletedRows);
      });
    },
  };
}

/** `90 minutes`, `1.5 minutes`: a limit as the timeline and the issue comment say it. */
function formatMinutes(ms: number): string {
  const minutes = Math.round((ms / 60_000) * 100) / 100;
  return `${minutes} minute${minutes === 1 ? '' : 's'}`;
}
