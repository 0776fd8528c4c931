import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createStore } from '../../src/store/index.js';
import { STORE_KINDS, type TestStore } from '../helpers/stores.js';

const available = Object.fromEntries(await Promise.all(STORE_KINDS.map(async (k) => [k.kind, await k.available()])));

describe.each(STORE_KINDS)('after-commit effects on $kind', ({ kind, create }) => {
  let t: TestStore;

  beforeEach(async (ctx) => {
    if (!available[kind]) ctx.skip();
    t = await create();
    await t.store.migrate();
  });
  afterEach(async () => {
    await t?.cleanup();
  });

  const pause = (trx: Parameters<Parameters<TestStore['store']['transaction']>[0]>[0], value: 0 | 1) =>
    trx.updateTable('dispatch_state').set({ paused: value, updated_at: 1 }).where('id', '=', 1).execute();
  const paused = async () => (await t.store.db.selectFrom('dispatch_state').select('paused').executeTakeFirstOrThrow()).paused;

  it('run once the transaction has committed, in order, and see what it wrote', async () => {
    const seen: string[] = [];
    let inside = true;
    const result = await t.store.transaction(async (trx, scope) => {
      await pause(trx, 1);
      scope.afterCommit(() => seen.push(`first, inside=${inside}`));
      scope.afterCommit(() => seen.push('second'));
      expect(seen).toEqual([]);
      return 'done';
    });
    inside = false;
    expect(result).toBe('done');
    expect(seen).toEqual(['first, inside=true', 'second']);
    expect(await paused()).toBe(1);
  });

  it('never run for a transaction that rolls back', async () => {
    const seen: string[] = [];
    await expect(
      t.store.transaction(async (trx, scope) => {
        await pause(trx, 1);
        scope.afterCommit(() => seen.push('woken for nothing'));
        throw new Error('the transition failed');
      }),
    ).rejects.toThrow('the transition failed');
    expect(seen).toEqual([]);
    expect(await paused()).toBe(0);
  });

  it('belong to their own transaction when several commit together', async () => {
    // On SQLite these share one BEGIN…COMMIT (group commit), each in its own savepoint.
    const seen: number[] = [];
    const outcomes = await Promise.allSettled(
      [1, 2, 3, 4].map((n) =>
        t.store.transaction(async (trx, scope) => {
          scope.afterCommit(() => seen.push(n));
          if (n === 2) {
            await pause(trx, 1);
            throw new Error(`transaction ${n} failed`);
          }
          return n;
        }),
      ),
    );
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    expect(seen.sort()).toEqual([1, 3, 4]);
    expect(await paused()).toBe(0);
  });

  it('keep the commit when one of them throws, log it, and still run the rest', async () => {
    const logged: string[] = [];
    const logger = {
      warn() {},
      error: (details: object, message: string) => logged.push(`${message}: ${String((details as { err: Error }).err.message)}`),
    };
    const store = createStore({ url: t.url, schema: t.schema, logger });
    try {
      const seen: string[] = [];
      await store.transaction(async (trx, scope) => {
        await pause(trx, 1);
        scope.afterCommit(() => {
          throw new Error('a broken listener');
        });
        scope.afterCommit(() => seen.push('after the broken one'));
      });
      expect(seen).toEqual(['after the broken one']);
      expect(logged).toEqual(['an after-commit effect failed (the transaction did commit): a broken listener']);
      expect(await paused()).toBe(1);
    } finally {
      await store.close();
    }
  });

  it('cannot be added once the transaction is over', async () => {
    let late: ((effect: () => void) => void) | undefined;
    await t.store.transaction(async (_trx, scope) => {
      late = (effect) => scope.afterCommit(effect);
    });
    expect(() => late!(() => {})).toThrow(/after its transaction ended/);
  });
});
