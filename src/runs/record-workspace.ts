import { earlierTokenHashes, rememberReplacedToken } from './callback-tokens.js';
import { write, type EngineContext } from './engine-context.js';
import { LeaseLostError } from './errors.js';
import { RUN_STATUS } from './states.js';
import type { RunEngine } from './types.js';

type Details = Parameters<RunEngine['recordWorkspace']>[2];

/**
 * Before the workspace is created, under the claim's lease: its name, the hash of the callback
 * token it is given and the run's limits. Returns the hashes an earlier attempt's workspace of
 * the same name may have been started with.
 */
export function recordWorkspace(
  ctx: EngineContext,
  runId: number,
  leaseToken: string,
  details: Details,
): Promise<{ earlierTokenHashes: string[] }> {
  const { store } = ctx;
  return write(ctx, async (scope) => {
    let current = scope.trx.selectFrom('runs').select(['status', 'lease_token', 'callback_token_hash']).where('id', '=', runId);
    if (store.dialect === 'postgres') current = current.forUpdate();
    const row = await current.executeTakeFirst();
    if (!row || row.status !== RUN_STATUS.provisioning || row.lease_token !== leaseToken) throw new LeaseLostError(runId);
    // A re-claimed run may adopt the workspace its earlier attempt started, whose runner
    // reports with the earlier token: that one stays valid for the run (callback-tokens.ts).
    if (row.callback_token_hash !== details.callbackTokenHash) {
      await rememberReplacedToken(scope.trx, runId, row.callback_token_hash, ctx.now());
    }
    const result = await scope.trx
      .updateTable('runs')
      .set({
        workspace_name: details.workspaceName,
        callback_token_hash: details.callbackTokenHash,
        token_cap: details.tokenCap ?? null,
        max_duration_ms: details.maxDurationMs ?? null,
        updated_at: ctx.now(),
      })
      .where('id', '=', runId)
      .where('status', '=', RUN_STATUS.provisioning)
      .where('lease_token', '=', leaseToken)
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) !== 1) throw new LeaseLostError(runId);
    // The workspace of an earlier attempt, if it lives, was started with one of these.
    return { earlierTokenHashes: await earlierTokenHashes(scope.trx, runId) };
  });
}
