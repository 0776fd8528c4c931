import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { createPostgresTestStore, STORE_KINDS, type TestStore } from '../helpers/stores.js';

const available = Object.fromEntries(await Promise.all(STORE_KINDS.map(async (k) => [k.kind, await k.available()])));

describe.each(STORE_KINDS)('prepared statements on $kind', ({ kind, create }) => {
  let t: TestStore;
  const p = (n: number) => (kind === 'postgres' ? `$${n}` : '?');
  const insertFire = () =>
    t.store.prepare<{ name: string; slot: number }>(
      `INSERT INTO schedule_fires (name, slot, run_id, created_at) VALUES (${p(1)}, ${p(2)}, NULL, 0) RETURNING name, slot`,
    );
  const fires = async () =>
    (await t.store.db.selectFrom('schedule_fires').select(['name', 'slot']).orderBy('slot').execute()).map((r) => `${r.name}:${r.slot}`);

  beforeEach(async (ctx) => {
    if (!available[kind]) ctx.skip();
    t = await create();
    await t.store.migrate();
  });
  afterEach(async () => {
    await t?.cleanup();
  });

  it('run on their own and inside a transaction, whose rollback undoes them', async () => {
    const insert = insertFire();
    expect(await insert.execute(t.store.db, ['alone', 1])).toEqual([{ name: 'alone', slot: 1 }]);
    await t.store.transaction(async (trx) => {
      await insert.execute(trx, ['committed', 2]);
    });
    await expect(
      t.store.transaction(async (trx) => {
        await insert.execute(trx, ['rolled back', 3]);
        throw new Error('the transition failed');
      }),
    ).rejects.toThrow('the transition failed');
    expect(await fires()).toEqual(['alone:1', 'committed:2']);
  });

  it('runStatement: effects run once the statement has committed, and not when reading its rows fails', async () => {
    const insert = insertFire();
    const seen: string[] = [];
    const result = await t.store.runStatement(insert, ['one', 1], (rows, scope) => {
      scope.afterCommit(() => seen.push(`effect saw ${rows.length} row`));
      expect(seen).toEqual([]);
      return rows[0]!.name;
    });
    expect(result).toBe('one');
    expect(seen).toEqual(['effect saw 1 row']);

    await expect(
      t.store.runStatement(insert, ['two', 2], (_rows, scope) => {
        scope.afterCommit(() => seen.push('announced a failure'));
        throw new Error('unexpected rows');
      }),
    ).rejects.toThrow('unexpected rows');
    expect(seen).toEqual(['effect saw 1 row']);
    // A database error reaches the caller, with no effect run.
    await expect(
      t.store.runStatement(insert, ['one', 1], (_rows, scope) => scope.afterCommit(() => seen.push('duplicate'))),
    ).rejects.toThrow();
    expect(seen).toEqual(['effect saw 1 row']);
  });
});

describe('prepared statements on PostgreSQL', () => {
  let t: TestStore;

  beforeEach(async (ctx) => {
    if (!available.postgres) ctx.skip();
    // One connection, so what the session has prepared can be looked at.
    t = await createPostgresTestStore({ poolSize: 1 });
    await t.store.migrate();
  });
  afterEach(async () => {
    await t?.cleanup();
  });

  it('are parsed once per connection, under a name, and survive a column added meanwhile', async () => {
    const select = t.store.prepare<{ name: string }>('SELECT name FROM schedule_fires WHERE slot = $1');
    await t.store.db.insertInto('schedule_fires').values({ name: 'x', slot: 1, run_id: null, created_at: 0 }).execute();
    for (let i = 0; i < 3; i++) expect(await select.execute(t.store.db, [1])).toEqual([{ name: 'x' }]);
    const { rows } = await sql<{ name: string; statement: string }>`SELECT name, statement FROM pg_prepared_statements`.execute(t.store.db);
    expect(rows).toContainEqual({ name: expect.stringMatching(/^baton_\d+$/) as string, statement: select.text });
    // Another replica's migration: the statement names its columns, so its result type holds.
    await t.store.db.schema.alterTable('schedule_fires').addColumn('note', 'text').execute();
    expect(await select.execute(t.store.db, [1])).toEqual([{ name: 'x' }]);
  });
});
