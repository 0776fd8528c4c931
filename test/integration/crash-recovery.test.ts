import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULTS } from '../../src/runs/index.js';
import { createRunEngine, createRunQueries } from '../../src/runs/index.js';
import { spawnTs, type ChildHandle } from '../helpers/child.js';
import { createPostgresTestStore, STORE_KINDS, type TestStore } from '../helpers/stores.js';
import { until } from '../helpers/until.js';

const available = Object.fromEntries(await Promise.all(STORE_KINDS.map(async (k) => [k.kind, await k.available()])));
const CHILD = 'test/fixtures/dispatcher-child.ts';

let t: TestStore | undefined;
const children: ChildHandle[] = [];
const childEnv = () => ({ DATABASE_URL: t!.url, DB_SCHEMA: t!.schema ?? '' });

afterEach(async () => {
  await Promise.all(children.splice(0).map((c) => c.kill()));
  await t?.cleanup();
  t = undefined;
});

describe.each(STORE_KINDS)('dispatcher processes on $kind', ({ kind, create }) => {
  it('loses no accepted run and leaves none stuck when the dispatcher is killed -9 mid-claim', async (ctx) => {
    if (!available[kind]) ctx.skip();
    t = await create();
    await t.store.migrate();
    const engine = createRunEngine({ store: t.store, queue: { ...DEFAULTS.queue, concurrency: 2 } });
    const queries = createRunQueries({ store: t.store, concurrency: 2 });
    const ids: number[] = [];
    for (let n = 1; n <= 5; n++) ids.push((await engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: n })).run.id);

    // The first dispatcher hangs in workspace creation: it holds two claims when it dies.
    const doomed = spawnTs(CHILD, { ...childEnv(), NAME: 'doomed', CONCURRENCY: '2', LEASE_MS: '1000', CREATE_DELAY_MS: '600000' });
    children.push(doomed);
    await doomed.waitFor((m) => m.claimed !== undefined);
    await until(async () => (await queries.stats()).provisioning === 2, 'two claims');
    await doomed.kill('SIGKILL');
    expect((await queries.list()).map((r) => r.status).sort()).toEqual(['provisioning', 'provisioning', 'queued', 'queued', 'queued']);

    // A new dispatcher reclaims the expired leases and carries every run to its workspace.
    const survivor = spawnTs(CHILD, { ...childEnv(), NAME: 'survivor', CONCURRENCY: '2', LEASE_MS: '1000', AUTO_COMPLETE: '1' });
    children.push(survivor);
    await until(async () => (await queries.list()).every((r) => r.status === 'succeeded'), 'every run to succeed');
    const runs = await queries.list();
    expect(runs.map((r) => r.id).sort((a, b) => a - b)).toEqual(ids);
    const reclaimed = runs.filter((r) => r.attempts === 2);
    expect(reclaimed).toHaveLength(2);
    for (const run of reclaimed) {
      expect((await queries.events(run.id)).map((e) => e.type)).toEqual([
        'run:queued',
        'run:claimed',
        'run:requeued',
        'run:claimed',
        'run:started',
        'run:succeeded',
      ]);
    }
  });
});

// One SQLite file has one writer process by design; scale-out means PostgreSQL.
describe.skipIf(!available.postgres)('two dispatcher processes on one PostgreSQL database', () => {
  it('never claim the same run nor exceed the shared limit', async () => {
    t = await createPostgresTestStore();
    await t.store.migrate();
    const limit = 4;
    const engine = createRunEngine({ store: t.store, queue: { ...DEFAULTS.queue, concurrency: limit } });
    const queries = createRunQueries({ store: t.store, concurrency: limit });
    const total = 120;
    for (let n = 1; n <= total; n++) await engine.enqueue({ stage: 'review-code', owner: 'acme', repo: 'app', number: n });
    for (const name of ['a', 'b']) {
      const child = spawnTs(CHILD, { ...childEnv(), NAME: name, CONCURRENCY: String(limit), LEASE_MS: '30000', AUTO_COMPLETE: '1' });
      children.push(child);
    }
    let maxLive = 0;
    await until(
      async () => {
        const stats = await queries.stats();
        maxLive = Math.max(maxLive, stats.provisioning + stats.running);
        return (await queries.list({ status: 'succeeded', limit: 500 })).length === total;
      },
      'every run to succeed',
      60_000,
    );
    expect(maxLive).toBeLessThanOrEqual(limit);
    const claims = children.flatMap((c) => c.messages.filter((m) => m.claimed !== undefined).map((m) => m.claimed as number));
    expect(claims).toHaveLength(total);
    expect(new Set(claims).size).toBe(total);
    // Both processes did real work: the claim is shared, not won by one forever.
    for (const child of children) expect(child.messages.some((m) => m.claimed !== undefined)).toBe(true);
  });
});
