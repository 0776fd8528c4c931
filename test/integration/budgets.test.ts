import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { nextDayStart, type BudgetsConfig } from '../../src/budgets/index.js';
import { DEFAULTS, type QueueConfig } from '../../src/runs/index.js';
import {
  createBudgetService,
  createRunEngine,
  createRunQueries,
  type RunQueries,
  type RunService,
  type Run,
  type TaskRequest,
} from '../../src/runs/index.js';
import { createStore, type Store } from '../../src/store/index.js';
import { STORE_KINDS, type TestStore } from '../helpers/stores.js';

const available = Object.fromEntries(await Promise.all(STORE_KINDS.map(async (k) => [k.kind, await k.available()])));

const task = (number: number, over: Partial<TaskRequest> = {}): TaskRequest => ({
  stage: 'develop',
  owner: 'acme',
  repo: 'app',
  number,
  ...over,
});

const budgets = (over: Partial<BudgetsConfig> = {}): BudgetsConfig => ({
  timezone: 'UTC',
  global: {},
  repositories: {},
  stages: {},
  ...over,
});

const tokens = (n: number) => ({ inputTokens: Math.floor(n / 2), outputTokens: n - Math.floor(n / 2) });

describe.each(STORE_KINDS)('daily budgets on $kind', ({ kind, create }) => {
  let t: TestStore;
  let clock: number;
  const queue: QueueConfig = { ...DEFAULTS.queue, concurrency: 2 };
  let runs: RunQueries;

  const engineWith = (config: BudgetsConfig, store: Store = t.store) =>
    createRunEngine({ store, queue, now: () => clock, random: () => 1, budgets: config });

  /** Claims what it can and brings each claimed run up to running. */
  async function start(engine: RunService): Promise<Run[]> {
    const claims = await engine.claim();
    const started: Run[] = [];
    for (const { run, leaseToken } of claims) {
      await engine.recordWorkspace(run.id, leaseToken, { workspaceName: `ws-${run.id}`, callbackTokenHash: 'x' });
      started.push(await engine.markRunning(run.id, leaseToken, { workspaceId: `id-${run.id}` }));
    }
    return started;
  }

  const statusOf = async (ids: number[]) => Promise.all(ids.map(async (id) => (await runs.get(id))!.status));

  beforeEach(async (ctx) => {
    if (!available[kind]) ctx.skip();
    t = await create();
    await t.store.migrate();
    runs = createRunQueries({ store: t.store, concurrency: queue.concurrency });
    // 2026-12-01 20:00 in Tokyo (UTC+9, no daylight saving time).
    clock = Date.UTC(2026, 11, 1, 11, 0);
  });
  afterEach(async () => {
    await t?.cleanup();
  });

  it('holds new runs once the budget is spent mid-stream, lets running ones finish, and releases them at midnight in its zone, in order', async () => {
    const engine = engineWith(budgets({ timezone: 'Asia/Tokyo', global: { tokens: 1000 } }));
    const ids: number[] = [];
    for (let n = 1; n <= 5; n++) ids.push((await engine.enqueue(task(n))).run.id);

    const first = await start(engine);
    expect(first.map((r) => r.id)).toEqual(ids.slice(0, 2));
    await engine.complete(ids[0]!, { status: 'succeeded', usage: tokens(600), costUsd: 0.5 });
    // 600 of 1000: run 3 may still start.
    expect((await start(engine)).map((r) => r.id)).toEqual([ids[2]]);
    // Run 2 crosses the budget (1200 of 1000) while run 3 is running: run 3 is not stopped.
    await engine.complete(ids[1]!, { status: 'succeeded', usage: tokens(600) });
    expect(await start(engine)).toEqual([]);
    expect(await statusOf(ids)).toEqual(['succeeded', 'succeeded', 'running', 'held', 'held']);
    const { run: finished } = await engine.complete(ids[2]!, { status: 'failed', usage: tokens(100), error: 'agent_error' });
    expect(finished.status).toBe('failed');

    const held = (await runs.get(ids[3]!))!;
    expect(held.heldReason).toMatch(/the global daily budget is spent \(1,200 of 1,000 tokens used\)/);
    expect(held.heldReason).toContain('2026-12-02 00:00 Asia/Tokyo');
    const events = await runs.events(held.id);
    expect(events.map((e) => [e.type, e.fromStatus, e.toStatus])).toContainEqual(['run:held', 'queued', 'held']);
    expect(events.find((e) => e.type === 'run:held')!.data).toMatchObject({ scope: 'global' });

    // A run queued while the budget is spent is held at its turn; a duplicate merges into a held run.
    const late = (await engine.enqueue(task(6))).run.id;
    expect((await engine.enqueue(task(4))).outcome).toBe('coalesced');
    expect(await start(engine)).toEqual([]);
    expect((await runs.get(late))!.status).toBe('held');
    expect((await runs.stats()).held).toBe(3);

    // One millisecond before midnight in Tokyo nothing moves; at midnight the held runs go, oldest first.
    const midnight = nextDayStart(clock, 'Asia/Tokyo');
    expect(midnight).toBe(Date.UTC(2026, 11, 1, 15, 0));
    clock = midnight - 1;
    expect(await start(engine)).toEqual([]);
    clock = midnight;
    expect((await start(engine)).map((r) => r.id)).toEqual([ids[3], ids[4]]);
    expect((await runs.get(late))!).toMatchObject({ status: 'queued', heldReason: null });
    const released = (await runs.events(ids[3]!)).filter((e) => e.type === 'run:released');
    expect(released.map((e) => [e.fromStatus, e.toStatus])).toEqual([['held', 'queued']]);
  });

  it('holds only the runs of a spent stage or repository budget, counts cost, and a raise releases them in order', async () => {
    const config = budgets({ stages: { develop: { tokens: 500 } }, repositories: { 'acme/web': { costUsd: 1 } } });
    const engine = engineWith(config);
    const service = createBudgetService({ store: t.store, config, wake: engine.wake });

    const spender = (await engine.enqueue(task(1))).run.id;
    const webSpender = (await engine.enqueue(task(2, { repo: 'web', stage: 'test' }))).run.id;
    await start(engine);
    await engine.complete(spender, { status: 'succeeded', usage: tokens(500) });
    await engine.complete(webSpender, { status: 'succeeded', usage: tokens(10), costUsd: 1.25 });

    const develop = [(await engine.enqueue(task(3))).run.id, (await engine.enqueue(task(4, { repo: 'other' }))).run.id];
    const web = (await engine.enqueue(task(5, { repo: 'web', stage: 'review-code' }))).run.id;
    const free = (await engine.enqueue(task(6, { stage: 'test' }))).run.id;
    expect((await start(engine)).map((r) => r.id)).toEqual([free]);
    expect(await statusOf([...develop, web])).toEqual(['held', 'held', 'held']);
    expect((await runs.get(web))!.heldReason).toMatch(/daily budget of repository acme\/web is spent \(\$1\.25 of \$1\.00 used\)/);

    const before = await service.overview(clock);
    expect(before).toMatchObject({ timezone: 'UTC', day: '2026-12-01', resetsAt: Date.UTC(2026, 11, 2), held: 3 });
    expect(before.budgets).toEqual([
      {
        scope: 'repository:acme/web',
        kind: 'repository',
        name: 'acme/web',
        tokens: null,
        costUsd: { limit: 1, used: 1.25, remaining: 0 },
        raised: false,
        exhausted: true,
        held: 1,
      },
      {
        scope: 'stage:develop',
        kind: 'stage',
        name: 'develop',
        tokens: { limit: 500, used: 500, remaining: 0 },
        costUsd: null,
        raised: false,
        exhausted: true,
        held: 2,
      },
    ]);

    expect(await service.setToday('stage:nope', { tokens: 10 }, clock)).toBeNull();
    const raised = await service.setToday('stage:develop', { tokens: 2000 }, clock);
    expect(raised!.budgets.find((b) => b.scope === 'stage:develop')).toMatchObject({
      tokens: { limit: 2000, used: 500, remaining: 1500 },
      raised: true,
      exhausted: false,
    });
    await engine.complete(free, { status: 'succeeded' });
    expect((await start(engine)).map((r) => r.id)).toEqual(develop);
    expect((await runs.get(web))!.status).toBe('held');

    // The raise is for today only: tomorrow the configured limit applies again, to tomorrow's usage.
    clock = Date.UTC(2026, 11, 2, 0, 0);
    const tomorrow = await service.overview(clock);
    expect(tomorrow.budgets.find((b) => b.scope === 'stage:develop')).toMatchObject({
      tokens: { limit: 500, used: 0, remaining: 500 },
      raised: false,
    });
  });

  it('releases runs held under a configuration that no longer has budgets', async () => {
    const strict = engineWith(budgets({ global: { costUsd: 0.01 } }));
    const spender = (await strict.enqueue(task(1))).run.id;
    await start(strict);
    await strict.complete(spender, { status: 'succeeded', costUsd: 0.02 });
    const waiting = (await strict.enqueue(task(2))).run.id;
    await start(strict);
    expect((await runs.get(waiting))!.status).toBe('held');

    const relaxed = engineWith(budgets());
    expect((await start(relaxed)).map((r) => r.id)).toEqual([waiting]);
  });

  it('lets a held run be cancelled', async () => {
    const engine = engineWith(budgets({ global: { tokens: 1 } }));
    const spender = (await engine.enqueue(task(1))).run.id;
    await start(engine);
    await engine.complete(spender, { status: 'succeeded', usage: tokens(2) });
    const waiting = (await engine.enqueue(task(2))).run.id;
    await start(engine);
    expect((await engine.cancel(waiting)).status).toBe('cancelled');
  });

  // Replicas share a database only on PostgreSQL: the test exists there alone.
  if (kind === 'postgres')
    it('never overspends across two replicas beyond the runs already started', async () => {
      const second = createStore({ url: t.url, schema: t.schema });
      try {
        const config = budgets({ global: { tokens: 1000 } });
        const replicas = [engineWith(config), engineWith(config, second)];
        const ids: number[] = [];
        for (let n = 1; n <= 10; n++) ids.push((await replicas[0]!.enqueue(task(n))).run.id);
        // Rounds: both replicas claim at once, then every started run reports 400 tokens.
        const started: number[] = [];
        for (let round = 0; round < 4; round++) {
          const claimed = (await Promise.all(replicas.map((r) => start(r)))).flat();
          started.push(...claimed.map((r) => r.id));
          await Promise.all(claimed.map((r, i) => replicas[i % 2]!.complete(r.id, { status: 'succeeded', usage: tokens(400) })));
        }
        // Concurrency 2: two runs (800 tokens), then two more (800 < 1000 when they started), then none.
        expect(started.sort((a, b) => a - b)).toEqual(ids.slice(0, 4));
        const overview = await createBudgetService({ store: second, config, wake: () => {} }).overview(clock);
        expect(overview.held).toBe(6);
        expect(overview.budgets[0]).toMatchObject({ scope: 'global', tokens: { limit: 1000, used: 1600, remaining: 0 }, held: 6 });
      } finally {
        await second.close();
      }
    });
});
