import type { EffectScope, PreparedStatement, TransactionScope } from '../store/index.js';
import { write, type EngineContext } from './engine-context.js';
import { toWritten, type Written, type WrittenRow } from './postgres-statements.js';
import type { RunEventType } from './states.js';
import { announceWritten, hookActsOn, runHooks } from './transition.js';

/** What a hot transition's statement wrote, read from its rows. */
export interface Accepted<T> {
  result: T;
  written: Written[];
  teardown?: boolean;
}

/** Whether a transition recording an event of `type` needs a transaction for the hooks' writes. */
export function hooksWriteFor(ctx: EngineContext, type: RunEventType): boolean {
  return ctx.hooks.some((hook) => hookActsOn(hook, type));
}

/** The one row a transition's statement wrote, or undefined. */
export const firstWritten = (rows: WrittenRow[]): Written | undefined => (rows[0] ? toWritten(rows[0]) : undefined);

/**
 * Runs a hot transition's single statement (postgres-statements.ts): on its own when no hook
 * has to write in its transaction, one round trip; otherwise inside a transaction, with the
 * hooks. `accept` reads its rows into the result and what was written, may throw (nothing was
 * written then), or returns undefined for a case the statement leaves alone: `slow` then does
 * it step by step, in the same transaction, or in a new one after the statement ran on its own.
 */
export async function writeStatement<R, T>(
  ctx: EngineContext,
  type: RunEventType,
  statement: PreparedStatement<R>,
  values: readonly unknown[],
  accept: (rows: R[]) => Accepted<T> | undefined,
  slow: (scope: TransactionScope) => Promise<T>,
): Promise<T> {
  const record = (scope: EffectScope, accepted: Accepted<T>): T => {
    announceWritten(scope, ctx, accepted.written);
    if (accepted.teardown) ctx.teardownQueued(scope);
    return accepted.result;
  };
  if (!hooksWriteFor(ctx, type)) {
    const done = await ctx.store.runStatement(statement, values, (rows, scope) => {
      const accepted = accept(rows);
      return accepted && { result: record(scope, accepted) };
    });
    return done ? done.result : write(ctx, slow);
  }
  return write(ctx, async (scope) => {
    const accepted = accept(await statement.execute(scope.trx, values));
    if (!accepted) return slow(scope);
    await runHooks(scope, ctx, accepted.written);
    return record(scope, accepted);
  });
}
