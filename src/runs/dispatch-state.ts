import { write, type EngineContext } from './engine-context.js';

/** Stops claiming, on every replica (`dispatch_state.paused`, read under the claim's lock); runs in flight go on. */
export async function pauseDispatch(ctx: EngineContext): Promise<void> {
  await ctx.store.db.updateTable('dispatch_state').set({ paused: 1, updated_at: ctx.now() }).where('id', '=', 1).execute();
}

/** Claims again, and wakes every replica's dispatcher once that has committed. */
export function resumeDispatch(ctx: EngineContext): Promise<void> {
  return write(ctx, async (scope) => {
    await scope.trx.updateTable('dispatch_state').set({ paused: 0, updated_at: ctx.now() }).where('id', '=', 1).execute();
    ctx.wake(scope, true);
  });
}
