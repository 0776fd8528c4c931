import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTokenStore, hashToken, type TokenStore } from '../../src/tokens/index.js';
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

  it('takes the bootstrap token it is given', async () => {
    const minted = await tokens.bootstrap('baton_given-bootstrap-token-0000');
    expect(minted?.token).toBe('baton_given-bootstrap-token-0000');
    expect(await tokens.verify('baton_given-bootstrap-token-0000')).toMatchObject({ name: 'admin' });
  });
});
