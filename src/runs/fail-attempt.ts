import { backoffDelay } from '../background/index.js';
import { write, type EngineContext } from './engine-context.js';
import { finish, requeue, requireLease } from './finish.js';
import { RUN_EVENT, RUN_STATUS } from './states.js';
import { recordTransition } from './transition.js';
import type { Run } from './types.js';

/**
 * A provisioning attempt failed, under the claim's lease: back to queued after a backoff, `dead`
 * when its attempts are used up, or `failed` when the provider says it is permanent.
 */
export function failAttempt(
  ctx: EngineContext,
  runId: number,
  leaseToken: string,
  error: string,
  opts: { permanent?: boolean; transient?: string },
): Promise<Run> {
  const { queue } = ctx;
  return write(ctx, async (scope) => {
    const run = await requireLease(scope, ctx, runId, leaseToken);
    if (opts.permanent) return finish(scope, ctx, run, RUN_STATUS.failed, { last_error: error }, { error });
    // A full disk or a lack of descriptors passes: the run waits it out (backing off up to
    // backoffMaxMs) instead of dying of it; its timeline says why it waits.
    if (run.attempts >= run.maxAttempts && !opts.transient) {
      return finish(scope, ctx, run, RUN_STATUS.dead, { last_error: error }, { error, attempts: run.attempts });
    }
    const delayMs = backoffDelay({ baseMs: queue.backoffBaseMs, maxMs: queue.backoffMaxMs }, run.attempts, ctx.random);
    const queued = await requeue(scope, ctx, run, ctx.now() + delayMs, error);
    await recordTransition(scope, ctx, queued, run.status, RUN_EVENT.retrying, {
      error,
      attempt: run.attempts,
      delayMs,
      ...(opts.transient ? { transient: opts.transient } : {}),
    });
    return queued;
  });
}
