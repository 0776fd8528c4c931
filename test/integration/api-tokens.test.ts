import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { applyMigrations } from '../../src/store/migrate.js';
import { migrations } from '../../src/store/index.js';
import { createSessionStore, createTokenStore, hashToken, type TokenStore } from '../../src/tokens/index.js';
import { STORE_KINDS, type TestStore } from '../helpers/stores.js';

const available = Object.fromEntries(await Promise.all(STORE_KINDS.map(async (k) => [k.kind, await k.available()])));

describe.each(STORE_KINDS)('API tokens on $kind', ({ kind, create }) => {
  let t: TestStore;
  let tokens: TokenStore;
  let clock: number;

  beforeEach(async (ctx) => {
    if (!available[kind]) ctx.skip();
    t = await create();
    await t.store.migrate();
    clock = 1_700_000_000_000;
    tokens = createTokenStore({ store: t.store, now: () => clock });
  });
  afterEach(async () => {
    await t?.cleanup();
  });

  it('stores only the hash, verifies, records use, and stops accepting a revoked token', async () => {
    const minted = await tokens.create('ci');
    const rows = await t.store.db.selectFrom('api_tokens').selectAll().execute();
    expect(JSON.stringify(rows)).not.toContain(minted.token);
    expect(rows[0]!.token_hash).toBe(hashToken(minted.token));

    clock += 1_000;
    expect(await tokens.verify(minted.token)).toMatchObject({ name: 'ci', lastUsedAt: clock });
    expect(await tokens.verify(`${minted.token}x`)).toBeNull();
    expect(await tokens.verify('')).toBeNull();

    await tokens.revoke('ci');
    expect(await tokens.verify(minted.token)).toBeNull();
    // The name is free again; the old token stays dead.
    const next = await tokens.create('ci');
    expect(await tokens.verify(next.token)).toMatchObject({ name: 'ci' });
    expect(await tokens.verify(minted.token)).toBeNull();
    expect((await tokens.list()).map((x) => [x.name, x.revokedAt !== null])).toEqual([
      ['ci', true],
      ['ci', false],
    ]);
  });

  it('bootstraps exactly one admin token when replicas start together, and none once tokens exist', async () => {
    const other = createTokenStore({ store: t.store });
    const results = await Promise.all([tokens.bootstrap(), other.bootstrap(), tokens.bootstrap()]);
    const minted = results.filter((r) => r !== null);
    expect(minted).toHaveLength(1);
    expect(await tokens.verify(minted[0]!.token)).toMatchObject({ name: 'admin' });
    expect(await tokens.bootstrap('baton_another-given-token-000000')).toBeNull();
  });

  it('takes the bootstrap token it is given, keeping nothing of it but its hash', async () => {
    const given = 'baton_given-bootstrap-token-0000';
    const minted = await tokens.bootstrap(given);
    expect(minted?.token).toBe(given);
    expect(await tokens.verify(given)).toMatchObject({ name: 'admin', scope: 'admin', hint: null });
    const rows = await t.store.db.selectFrom('api_tokens').selectAll().execute();
    expect(JSON.stringify(rows)).not.toContain(given.slice(0, 10));
  });

  it('mints tokens with a scope, read unless told', async () => {
    expect((await tokens.create('viewer')).scope).toBe('read');
    expect((await tokens.create('ci', 'operate')).scope).toBe('operate');
    expect((await tokens.list()).map((x) => [x.name, x.scope])).toEqual([
      ['viewer', 'read'],
      ['ci', 'operate'],
    ]);
    await expect(tokens.create('x', 'root' as never)).rejects.toThrow(/scope must be one of read, operate, submit:arguments, admin/);
  });

  it('makes every token from before scopes an admin token', async () => {
    const fresh = await create();
    try {
      const before = migrations.filter((m) => m.name < '0041');
      await applyMigrations(fresh.store.db, kind, (fn) => fresh.store.transaction((trx) => fn(trx)), before);
      await fresh.store.db
        .insertInto('api_tokens')
        .values({
          name: 'old',
          token_hash: hashToken('baton_old'),
          hint: 'baton_old',
          created_at: 1,
          last_used_at: null,
          revoked_at: null,
        } as never)
        .execute();
      await fresh.store.migrate();
      expect(await createTokenStore({ store: fresh.store }).verify('baton_old')).toMatchObject({ name: 'old', scope: 'admin' });
    } finally {
      await fresh.cleanup();
    }
  });

  it('ends every session of a token when the token is revoked', async () => {
    const sessions = createSessionStore({ store: t.store, now: () => clock, lifetime: { idleMs: 60_000, maxAgeMs: 3_600_000 } });
    const laptop = await tokens.create('laptop', 'operate');
    const other = await tokens.create('other');
    const a = await sessions.create(laptop);
    const b = await sessions.create(laptop);
    const c = await sessions.create(other);
    expect(await sessions.verify(a.sessionId)).toMatchObject({ token: { name: 'laptop', scope: 'operate' } });
    await tokens.revoke('laptop');
    expect(await sessions.verify(a.sessionId)).toBeNull();
    expect(await sessions.verify(b.sessionId)).toBeNull();
    expect(await sessions.verify(c.sessionId)).toMatchObject({ token: { name: 'other' } });
    // Idle sessions end, and ended ones are pruned.
    clock += 61_000;
    expect(await sessions.verify(c.sessionId)).toBeNull();
    expect(await sessions.prune()).toBe(3);
  });
});
