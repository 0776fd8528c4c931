import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULTS } from '../../src/runs/index.js';
import { createRunEngine, createTeardownWorker, type TeardownWorker } from '../../src/runs/index.js';
import { createMemoryProvider } from '../../src/workspaces/index.js';
import { spawnTs, type ChildHandle } from '../helpers/child.js';
import { silentLogger } from '../helpers/logger.js';
import { STORE_KINDS, type TestStore } from '../helpers/stores.js';
import { until } from '../helpers/until.js';

const available = Object.fromEntries(await Promise.all(STORE_KINDS.map(async (k) => [k.kind, await k.available()])));
const CHILD = 'test/fixtures/teardown-child.ts';
const LEASE_MS = 600;

let t: TestStore | undefined;
let worker: TeardownWorker | undefined;
const children: ChildHandle[] = [];

afterEach(async () => {
  await Promise.all(children.splice(0).map((c) => c.kill()));
  await worker?.stop();
  worker = undefined;
  await t?.cleanup();
  t = undefined;
});

describe.each(STORE_KINDS)('teardown leases on $kind', ({ kind, create }) => {
  it('are renewed while a teardown runs, and a crashed worker’s job is taken over about one lease later', async (ctx) => {
    if (!available[kind]) ctx.skip();
    t = await create();
    await t.store.migrate();
    const engine = createRunEngine({ store: t.store, queue: DEFAULTS.queue });
    await engine.requestTeardown(null, 'ws-slow');
    const lease = async () =>
      (await t!.store.db.selectFrom('teardowns').select(['lease_expires_at', 'status']).executeTakeFirstOrThrow()).lease_expires_at;

    const doomed = spawnTs(CHILD, { DATABASE_URL: t.url, DB_SCHEMA: t.schema ?? '', LEASE_MS: String(LEASE_MS) });
    children.push(doomed);
    await doomed.waitFor((m) => m.tearing === 'ws-slow');

    // A second worker watches the same table; while the first one lives it must not take the job.
    const tornDown: string[] = [];
    worker = createTeardownWorker({
      store: t.store,
      provider: createMemoryProvider(),
      cleanup: { concurrency: 2, maxAttempts: 5, backoffBaseMs: 100, workspaceCheckMs: 15_000, leaseMs: LEASE_MS },
      logger: silentLogger,
      pollMs: 20,
      teardown: async (_provider, name) => void tornDown.push(name),
    });
    worker.start();
    // Witness that time passed with the job held: its lease was renewed past three original leases.
    const first = (await lease()) as number;
    await until(async () => ((await lease()) ?? 0) > first + 3 * LEASE_MS, 'the running teardown’s lease to be renewed');
    expect(tornDown).toEqual([]);

    await doomed.kill('SIGKILL');
    await until(() => tornDown.length > 0, 'the other worker to take the crashed worker’s teardown over');
    expect(tornDown).toEqual(['ws-slow']);
    await until(
      async () => (await t!.store.db.selectFrom('teardowns').select('status').executeTakeFirstOrThrow()).status === 'done',
      'done',
    );
  }, 60_000);
});
