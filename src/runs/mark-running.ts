import { write, type EngineContext } from './engine-context.js';
import { LeaseLostError } from './errors.js';
import { toRun } from './rows.js';
import { RUN_EVENT, RUN_STATUS } from './states.js';
import { recordTransition } from './transition.js';
import type { Run } from './types.js';
import { firstWritten, writeStatement } from './write-statement.js';

/**
 * provisioning → running: the workspace is up. The lease is released, the concurrency slot kept.
 * On PostgreSQL the run and its event are written by one statement (postgres-statements.ts).
 */
export function markRunning(ctx: EngineContext, runId: number, leaseToken: string, details: { workspaceId: string }): Promise<Run> {
  const statements = ctx.postgres;
  if (statements) {
    return writeStatement(
      ctx,
      RUN_EVENT.started,
      statements.markRunning,
      [runId, leaseToken, details.workspaceId, ctx.now()],
      (rows) => {
        const written = firstWritten(rows);
        if (!written) throw new LeaseLostError(runId);
        return { result: written.run, written: [written] };
      },
      () => Promise.reject(new LeaseLostError(runId)),
    );
  }
  return write(ctx, async (scope) => {
    const t = ctx.now();
    // The lease check is the UPDATE's own condition: one round trip instead of lock-then-write.
    const row = await scope.trx
      .updateTable('runs')
      .set({
        status: RUN_STATUS.running,
        workspace_id: details.workspaceId,
        lease_token: null,
        lease_expires_at: null,
        started_at: t,
        updated_at: t,
      })
      .where('id', '=', runId)
      .where('status', '=', RUN_STATUS.provisioning)
      .where('lease_token', '=', leaseToken)
      .returningAll()
      .executeTakeFirst();
    if (!row) throw new LeaseLostError(runId);
    const started = toRun(row);
    await recordTransition(scope, ctx, started, RUN_STATUS.provisioning, RUN_EVENT.started, { workspace: started.workspaceName });
    return started;
  });
}
