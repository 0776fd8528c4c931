import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULTS } from '../../src/runs/index.js';
import {
  createCallbackTokenChecks,
  createRunEngine,
  hashCallbackToken,
  type CallbackTokenChecks,
  type RunService,
} from '../../src/runs/index.js';
import { STORE_KINDS, type TestStore } from '../helpers/stores.js';

const available = Object.fromEntries(await Promise.all(STORE_KINDS.map(async (k) => [k.kind, await k.available()])));

describe.each(STORE_KINDS)('callback tokens across attempts on $kind', ({ kind, create }) => {
  let t: TestStore;
  let clock: number;
  let engine: RunService;
  let tokens: CallbackTokenChecks;

  beforeEach(async (ctx) => {
    if (!available[kind]) ctx.skip();
    t = await create();
    await t.store.migrate();
    clock = 1_700_000_000_000;
    engine = createRunEngine({ store: t.store, queue: { ...DEFAULTS.queue, leaseMs: 1_000 }, now: () => clock, random: () => 1 });
    tokens = createCallbackTokenChecks(t.store.db);
  });
  afterEach(async () => {
    await t?.cleanup();
  });

  /** Claims the run and records a workspace with `token`, as the dispatcher does. */
  async function attempt(token: string) {
    const [claim] = await engine.claim();
    await engine.recordWorkspace(claim!.run.id, claim!.leaseToken, { workspaceName: 'ws-1', callbackTokenHash: hashCallbackToken(token) });
    return claim!;
  }

  it('accepts the token of an earlier attempt whose workspace a re-claim adopted, and forgets it on retry', async () => {
    const { run } = await engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 1 });
    await attempt('first-token');
    // The server died; its lease runs out and the run is claimed again with a new token.
    clock += 2_000;
    expect(await engine.reclaimExpiredLeases()).toBe(1);
    // Between the two claims the adopted runner may already report: its token still holds.
    expect(await tokens.verifyCallbackToken(run.id, 'first-token')).not.toBeNull();
    const second = await attempt('second-token');
    expect(await tokens.verifyCallbackToken(run.id, 'first-token')).toMatchObject({ id: run.id });
    expect(await tokens.verifyCallbackToken(run.id, 'second-token')).toMatchObject({ id: run.id });
    expect(await tokens.verifyCallbackToken(run.id, 'another-token')).toBeNull();

    await engine.markRunning(run.id, second.leaseToken, { workspaceId: 'ws-1' });
    await engine.complete(run.id, { status: 'failed', error: 'agent crashed' });
    await engine.retry(run.id);
    for (const token of ['first-token', 'second-token']) expect(await tokens.verifyCallbackToken(run.id, token)).toBeNull();
    await attempt('third-token');
    expect(await tokens.verifyCallbackToken(run.id, 'first-token')).toBeNull();
    expect(await tokens.verifyCallbackToken(run.id, 'third-token')).toMatchObject({ id: run.id });
  });

  it('forgets the tokens of pruned runs', async () => {
    const { run } = await engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 1 });
    await attempt('first-token');
    clock += 2_000;
    await engine.reclaimExpiredLeases();
    const second = await attempt('second-token');
    await engine.markRunning(run.id, second.leaseToken, { workspaceId: 'ws-1' });
    await engine.complete(run.id, { status: 'succeeded' });
    clock += (DEFAULTS.queue.retentionDays + 1) * 24 * 60 * 60_000;
    expect(await engine.prune()).toBe(1);
    const left = await t.store.db
      .withTables<{ callback_token_history: { run_id: number } }>()
      .selectFrom('callback_token_history')
      .selectAll()
      .execute();
    expect(left).toEqual([]);
  });
});
