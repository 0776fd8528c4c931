import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULTS, type QueueConfig } from '../../src/runs/index.js';
import {
  createRunEngine,
  createRunQueries,
  createScheduler,
  hookFor,
  IllegalTransitionError,
  LeaseLostError,
  RUN_EVENT,
  type RunQueries,
  type RunService,
  type Run,
  type RunEvent,
  type RunEventType,
  type TaskRequest,
} from '../../src/runs/index.js';
import { recordTransition } from '../../src/runs/transition.js';
import type { TransactionScope } from '../../src/store/index.js';
import { silentLogger } from '../helpers/logger.js';
import { STORE_KINDS, type TestStore } from '../helpers/stores.js';

const available = Object.fromEntries(await Promise.all(STORE_KINDS.map(async (k) => [k.kind, await k.available()])));

const task = (over: Partial<TaskRequest> = {}): TaskRequest => ({ stage: 'develop', owner: 'acme', repo: 'app', number: 7, ...over });

describe.each(STORE_KINDS)('run engine on $kind', ({ kind, create }) => {
  let t: TestStore;
  let clock: number;
  let engine: RunService;
  let queries: RunQueries;
  const queue: QueueConfig = { ...DEFAULTS.queue, concurrency: 2 };

  const makeEngine = (over: Partial<QueueConfig> = {}) =>
    createRunEngine({ store: t.store, queue: { ...queue, ...over }, now: () => clock, random: () => 1 });

  beforeEach(async (ctx) => {
    if (!available[kind]) ctx.skip();
    t = await create();
    await t.store.migrate();
    clock = 1_700_000_000_000;
    engine = makeEngine();
    queries = createRunQueries({ store: t.store, concurrency: queue.concurrency });
  });
  afterEach(async () => {
    await t?.cleanup();
  });

  it('queues a run under the key {stage}:{owner}/{repo}#{number} and records the transition', async () => {
    const result = await engine.enqueue(task());
    expect(result.outcome).toBe('queued');
    expect(result.run).toMatchObject({ key: 'develop:acme/app#7', status: 'queued', attempts: 0 });
    const events = await queries.events(result.run.id);
    expect(events.map((e) => [e.type, e.fromStatus, e.toStatus])).toEqual([['run:queued', null, 'queued']]);
  });

  it('returns and announces a new run and its event exactly as they are stored, with hooks and without', async () => {
    const announced: Array<[RunEvent, Run]> = [];
    engine.on('run:event', (event, run) => announced.push([event, run]));
    const hooked: Array<[RunEvent, Run]> = [];
    // With a hook the enqueue runs in a transaction of its own; without, on PostgreSQL, as one statement.
    const withHook = createRunEngine({
      store: t.store,
      queue,
      now: () => clock,
      hooks: [async (_scope, { run, event }) => void hooked.push([event, run])],
    });
    const payload = { trigger: 'label added by "alice"', account: 'review', nested: { list: [1, 'two', null] } };
    const plain = await engine.enqueue(task({ payload, delayMs: 500, maxAttempts: 5 }));
    const viaHook = await withHook.enqueue(task({ number: 8, key: 'custom:key' }));
    const stored = async (run: Run): Promise<[RunEvent, Run]> => [(await queries.events(run.id))[0]!, (await queries.get(run.id))!];
    expect(plain.run).toEqual((await stored(plain.run))[1]);
    expect(viaHook.run).toEqual((await stored(viaHook.run))[1]);
    expect(announced).toEqual([await stored(plain.run)]);
    expect(hooked).toEqual([await stored(viaHook.run)]);
  });

  it('calls a hook only for the event types it declares, whichever way each transition is written', async () => {
    const hooked: string[] = [];
    const record = async (_scope: TransactionScope, { run, event }: { run: Run; event: RunEvent }) =>
      void hooked.push(`${event.type} ${run.status}`);
    const withHook = createRunEngine({
      store: t.store,
      queue,
      now: () => clock,
      hooks: [hookFor([RUN_EVENT.started, RUN_EVENT.failed], record)],
    });
    const { run } = await withHook.enqueue(task());
    const [claim] = await withHook.claim();
    await withHook.markRunning(run.id, claim!.leaseToken, { workspaceId: 'w' });
    await withHook.complete(run.id, { status: 'failed', error: 'tests failed' });
    expect(hooked).toEqual(['run:started running', 'run:failed failed']);
    // The undeclared ones happened all the same.
    expect((await queries.events(run.id)).map((e) => e.type)).toEqual(['run:queued', 'run:claimed', 'run:started', 'run:failed']);
  });

  it('turns 50 concurrent duplicate enqueues into one run', async () => {
    const results = await Promise.all(Array.from({ length: 50 }, () => engine.enqueue(task())));
    const ids = new Set(results.map((r) => r.run.id));
    expect(ids.size).toBe(1);
    expect(results.filter((r) => r.outcome === 'queued')).toHaveLength(1);
    expect(results.filter((r) => r.outcome === 'coalesced')).toHaveLength(49);
    expect(await queries.list()).toHaveLength(1);
  });

  it('records exactly one follow-up for duplicates while running, and queues it when the run ends', async () => {
    const { run } = await engine.enqueue(task({ payload: { trigger: 'first' } }));
    const [claim] = await engine.claim();
    await engine.recordWorkspace(run.id, claim!.leaseToken, { workspaceName: 'ws-1', callbackTokenHash: 'x' });
    await engine.markRunning(run.id, claim!.leaseToken, { workspaceId: 'id-1' });
    const dup1 = await engine.enqueue(task({ payload: { trigger: 'second' } }));
    const dup2 = await engine.enqueue(task({ payload: { trigger: 'third' } }));
    expect(dup1.outcome).toBe('followup');
    expect(dup2.outcome).toBe('followup');
    expect((await queries.list()).length).toBe(1);

    await engine.complete(run.id, { status: 'succeeded', summary: 'done' });
    const runs = await queries.list();
    expect(runs).toHaveLength(2);
    const followup = runs.find((r) => r.id !== run.id)!;
    expect(followup).toMatchObject({ status: 'queued', key: run.key });
    expect(followup.payload).toMatchObject({ trigger: 'second', followupOf: run.id });
  });

  it('drops duplicates while running when the stage asks for it', async () => {
    await engine.enqueue(task());
    await engine.claim();
    const dup = await engine.enqueue(task({ onDuplicate: 'drop' }));
    expect(dup.outcome).toBe('dropped');
    expect(dup.run.followup).toBe(false);
  });

  it('never claims beyond the global limit and honours the per-repository limit', async () => {
    engine = makeEngine({ concurrency: 3, perRepositoryConcurrency: 1 });
    for (let n = 1; n <= 3; n++) await engine.enqueue(task({ number: n }));
    await engine.enqueue(task({ repo: 'other', number: 1 }));
    const claimed = await engine.claim();
    expect(claimed.map((c) => `${c.run.repo}#${c.run.number}`).sort()).toEqual(['app#1', 'other#1']);
    expect(await engine.claim()).toEqual([]);
  });

  it('retries provisioning failures with growing backoff, then marks the run dead with the last error', async () => {
    const { run } = await engine.enqueue(task());
    const delays: number[] = [];
    for (let attempt = 1; attempt <= 3; attempt++) {
      const [claim] = await engine.claim();
      expect(claim?.run.attempts).toBe(attempt);
      const after = await engine.failAttempt(run.id, claim!.leaseToken, `coder said no (${attempt})`);
      if (attempt < 3) {
        expect(after.status).toBe('queued');
        delays.push(after.runAt - clock);
        expect(await engine.claim()).toEqual([]); // not due yet
        clock = after.runAt;
      } else {
        expect(after).toMatchObject({ status: 'dead', lastError: 'coder said no (3)' });
      }
    }
    expect(delays).toEqual([5_000, 10_000]);
  });

  it('fails at once on a permanent provisioning error', async () => {
    const { run } = await engine.enqueue(task());
    const [claim] = await engine.claim();
    const after = await engine.failAttempt(run.id, claim!.leaseToken, 'CODER_TOKEN rejected', { permanent: true });
    expect(after).toMatchObject({ status: 'failed', lastError: 'CODER_TOKEN rejected' });
  });

  it('fences leases: after expiry and re-claim the old holder cannot move the run', async () => {
    const { run } = await engine.enqueue(task());
    const [first] = await engine.claim();
    clock += queue.leaseMs + 1;
    expect(await engine.reclaimExpiredLeases()).toBe(1);
    const [second] = await engine.claim();
    expect(second!.leaseToken).not.toBe(first!.leaseToken);
    await expect(engine.markRunning(run.id, first!.leaseToken, { workspaceId: 'w' })).rejects.toThrow(/no longer held/);
    expect(await engine.heartbeat(run.id, first!.leaseToken)).toBe(false);
    expect(await engine.heartbeat(run.id, second!.leaseToken)).toBe(true);
    await expect(engine.markRunning(run.id, second!.leaseToken, { workspaceId: 'w' })).resolves.toMatchObject({ status: 'running' });
  });

  it('records the outcome once, schedules teardown, and frees the slot', async () => {
    engine = makeEngine({ concurrency: 1 });
    const { run } = await engine.enqueue(task());
    await engine.enqueue(task({ number: 8 }));
    const [claim] = await engine.claim();
    await engine.recordWorkspace(run.id, claim!.leaseToken, { workspaceName: 'ws-7', callbackTokenHash: 'h' });
    await engine.markRunning(run.id, claim!.leaseToken, { workspaceId: 'id' });
    expect(await engine.claim()).toEqual([]);
    const outcome = {
      status: 'succeeded' as const,
      summary: 'PR opened',
      costUsd: 0.42,
      usage: { inputTokens: 10, outputTokens: 5 },
      durationMs: 1234,
    };
    const first = await engine.complete(run.id, outcome);
    const again = await engine.complete(run.id, { status: 'failed', summary: 'late duplicate' });
    expect(first.changed).toBe(true);
    expect(again.changed).toBe(false);
    expect(again.run).toMatchObject({ status: 'succeeded', summary: 'PR opened', costUsd: 0.42, durationMs: 1234 });
    const teardowns = await t.store.db.selectFrom('teardowns').selectAll().execute();
    expect(teardowns.map((r) => [r.workspace_name, r.status])).toEqual([['ws-7', 'pending']]);
    expect((await engine.claim()).map((c) => c.run.number)).toEqual([8]);
  });

  it('ends a run whose callback beats the workspace being seen up (provisioning → succeeded)', async () => {
    const { run } = await engine.enqueue(task());
    const [claim] = await engine.claim();
    await engine.recordWorkspace(run.id, claim!.leaseToken, { workspaceName: 'ws-fast', callbackTokenHash: 'h' });
    const { run: done, changed } = await engine.complete(run.id, { status: 'succeeded', summary: 'quick' });
    expect(changed).toBe(true);
    expect(done).toMatchObject({ status: 'succeeded', summary: 'quick' });
    expect((await queries.events(run.id)).map((e) => [e.type, e.fromStatus, e.toStatus])).toEqual([
      ['run:queued', null, 'queued'],
      ['run:claimed', 'queued', 'provisioning'],
      ['run:succeeded', 'provisioning', 'succeeded'],
    ]);
    // The dispatcher's late markRunning finds the lease gone and tears its workspace down.
    await expect(engine.markRunning(run.id, claim!.leaseToken, { workspaceId: 'w' })).rejects.toBeInstanceOf(LeaseLostError);
    const teardowns = await t.store.db.selectFrom('teardowns').select('workspace_name').execute();
    expect(teardowns.map((r) => r.workspace_name)).toEqual(['ws-fast']);
  });

  it('refuses a transition the table does not allow with a typed error, and writes nothing', async () => {
    const { run } = await engine.enqueue(task());
    const ctx = { now: () => clock, hooks: [], announce() {}, wake() {}, teardownQueued() {} };
    const attempt = t.store.transaction(async (trx, scope) => {
      await trx.updateTable('runs').set({ status: 'succeeded' }).where('id', '=', run.id).execute();
      // queued → succeeded: no workspace ever reported.
      await recordTransition(scope, ctx, { ...run, status: 'succeeded' }, 'queued', RUN_EVENT.succeeded);
    });
    await expect(attempt).rejects.toBeInstanceOf(IllegalTransitionError);
    await expect(attempt).rejects.toMatchObject({ code: 'conflict', from: 'queued', to: 'succeeded' });
    expect((await queries.get(run.id))?.status).toBe('queued');
    expect((await queries.events(run.id)).map((e) => e.type)).toEqual(['run:queued']);
  });

  it('announces events and wake-ups only after the commit, and nothing for a transition that rolls back', async () => {
    const failOnStart = async (_scope: unknown, { event }: { event: { type: RunEventType } }) => {
      if (event.type === RUN_EVENT.started) throw new Error('the outbox row could not be written');
    };
    engine = createRunEngine({ store: t.store, queue, now: () => clock, random: () => 1, hooks: [failOnStart] });
    const signals: string[] = [];
    engine.on('run:event', (event) => signals.push(event.type));
    engine.on('queue:wake', () => signals.push('queue:wake'));
    engine.on('teardown:queued', () => signals.push('teardown:queued'));

    const { run } = await engine.enqueue(task());
    const [claim] = await engine.claim();
    await engine.recordWorkspace(run.id, claim!.leaseToken, { workspaceName: 'ws-1', callbackTokenHash: 'h' });
    await expect(engine.markRunning(run.id, claim!.leaseToken, { workspaceId: 'w' })).rejects.toThrow(
      'the outbox row could not be written',
    );
    expect((await queries.get(run.id))?.status).toBe('provisioning');
    expect((await queries.events(run.id)).map((e) => e.type)).toEqual(['run:queued', 'run:claimed']);
    expect(signals).toEqual(['run:queued', 'queue:wake', 'run:claimed']);

    await engine.complete(run.id, { status: 'failed', error: 'gave up' });
    expect(signals.slice(3)).toEqual(['run:failed', 'queue:wake', 'teardown:queued']);
  });

  it("writes each hook row in its transition's transaction: with hooks, one fails, nothing of that transition stays", async () => {
    // Hooks turn the PostgreSQL one-statement transitions into statement-plus-hooks transactions.
    let failOn: RunEventType | undefined;
    const recordInHook = async (scope: TransactionScope, { run, event }: { run: Run; event: RunEvent }) => {
      if (event.type === failOn) throw new Error(`the outbox row for ${event.type} could not be written`);
      await scope.trx.insertInto('schedule_fires').values({ name: event.type, slot: event.id, run_id: run.id, created_at: 0 }).execute();
    };
    engine = createRunEngine({ store: t.store, queue, now: () => clock, random: () => 1, hooks: [recordInHook] });
    const hookRows = async () =>
      (await t.store.db.selectFrom('schedule_fires').select(['name', 'slot']).orderBy('slot').execute()).map((r) => `${r.name}#${r.slot}`);
    const eventRows = async (id: number) => (await queries.events(id)).map((e) => `${e.type}#${e.id}`);

    failOn = RUN_EVENT.queued;
    await expect(engine.enqueue(task())).rejects.toThrow('could not be written');
    expect(await queries.stats()).toMatchObject({ queued: 0 });

    failOn = undefined;
    const { run } = await engine.enqueue(task());
    const [claim] = await engine.claim();
    await engine.recordWorkspace(run.id, claim!.leaseToken, { workspaceName: 'ws-h', callbackTokenHash: 'h' });
    await engine.markRunning(run.id, claim!.leaseToken, { workspaceId: 'w' });
    failOn = RUN_EVENT.succeeded;
    await expect(engine.complete(run.id, { status: 'succeeded' })).rejects.toThrow('could not be written');
    expect((await queries.get(run.id))?.status).toBe('running');
    expect(await t.store.db.selectFrom('teardowns').select('workspace_name').execute()).toEqual([]);

    failOn = undefined;
    expect((await engine.complete(run.id, { status: 'succeeded', summary: 'ok' })).run.status).toBe('succeeded');
    expect(await hookRows()).toEqual(await eventRows(run.id));
    expect(await eventRows(run.id)).toHaveLength(4);
    expect((await t.store.db.selectFrom('teardowns').select('workspace_name').execute()).map((r) => r.workspace_name)).toEqual(['ws-h']);
  });

  it('cancels live runs, refuses to cancel finished ones, and retries failed ones', async () => {
    const { run } = await engine.enqueue(task());
    const cancelled = await engine.cancel(run.id, 'not needed');
    expect(cancelled.status).toBe('cancelled');
    await expect(engine.cancel(run.id)).rejects.toMatchObject({ code: 'conflict' });
    const retried = await engine.retry(run.id);
    expect(retried).toMatchObject({ status: 'queued', attempts: 0 });
    await engine.claim();
    await expect(engine.retry(run.id)).rejects.toThrow(/provisioning; only failed/);
    await expect(engine.retry(999_999)).rejects.toMatchObject({ code: 'not_found' });
  });

  it('refuses a retry while another run of the same key is live', async () => {
    const { run } = await engine.enqueue(task());
    await engine.cancel(run.id);
    await engine.enqueue(task());
    await expect(engine.retry(run.id)).rejects.toMatchObject({ code: 'conflict' });
  });

  it('claims nothing while paused and resumes', async () => {
    await engine.enqueue(task());
    await engine.pause();
    expect(await queries.isPaused()).toBe(true);
    expect(await engine.claim()).toEqual([]);
    await engine.resume();
    expect(await engine.claim()).toHaveLength(1);
  });

  it('keeps delayed runs until they are due', async () => {
    await engine.enqueue(task({ delayMs: 60_000 }));
    expect(await engine.claim()).toEqual([]);
    expect(await queries.nextDelayedRunAt(clock)).toBe(clock + 60_000);
    // A run already due is not one to wait for: it waits for a slot, whose freeing wakes the
    // dispatcher (a dispatcher told to wait for it claimed again every millisecond while all slots were taken).
    await engine.enqueue(task({ number: 2 }));
    expect(await queries.nextDelayedRunAt(clock)).toBe(clock + 60_000);
    expect((await engine.claim()).map((c) => c.run.number)).toEqual([2]);
    clock += 60_000;
    expect((await engine.claim()).map((c) => c.run.number)).toEqual([7]);
    expect(await queries.nextDelayedRunAt(clock)).toBeNull();
  });

  it('fires a cron slot once however many schedulers tick', async () => {
    clock = Date.parse('2026-11-30T09:00:30Z'); // a Monday
    const schedules = [
      {
        name: 'maintenance',
        cron: '0 9 * * 1',
        timezone: 'UTC',
        tasks: () => [{ stage: 'maintenance', owner: 'acme', repo: 'app' }],
      },
    ];
    const schedulers = [0, 1, 2].map(() => createScheduler({ engine: makeEngine(), schedules, logger: silentLogger, now: () => clock }));
    const fired = (await Promise.all(schedulers.map((s) => s.tick()))).flat();
    expect(fired).toEqual(['maintenance@2026-11-30T09:00:00.000Z']);
    // The run finishes; a late tick of the same slot must not start it again.
    const [claim] = await engine.claim();
    await engine.cancel(claim!.run.id);
    expect(await schedulers[0]!.tick()).toEqual([]);
    const runs = await queries.list();
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ stage: 'maintenance', key: 'maintenance:acme/app@2026-11-30T09:00:00.000Z' });
    // Next week's slot fires in its own time zone-aware slot.
    clock = Date.parse('2026-12-07T09:00:01Z');
    expect(await schedulers[1]!.tick()).toEqual(['maintenance@2026-12-07T09:00:00.000Z']);
  });

  it('fires in the configured time zone', async () => {
    clock = Date.parse('2026-11-30T08:00:10Z'); // 09:00:10 in Berlin (UTC+1)
    const scheduler = createScheduler({
      engine,
      schedules: [
        { name: 'weekly', cron: '0 9 * * 1', timezone: 'Europe/Berlin', tasks: () => [task({ stage: 'maintenance', number: undefined })] },
      ],
      logger: silentLogger,
      now: () => clock,
    });
    expect(await scheduler.tick()).toEqual(['weekly@2026-11-30T08:00:00.000Z']);
  });

  it('prunes finished runs past the retention and keeps the rest', async () => {
    const { run: old } = await engine.enqueue(task({ number: 1 }));
    await engine.cancel(old.id);
    clock += 31 * 24 * 60 * 60_000;
    const { run: fresh } = await engine.enqueue(task({ number: 2 }));
    expect(await engine.prune()).toBe(1);
    expect((await queries.list()).map((r) => r.id)).toEqual([fresh.id]);
    expect(await queries.events(old.id)).toEqual([]);
  });

  it('never exceeds the concurrency limit under a randomized schedule of enqueues, completions and failures', async () => {
    const limit = 3;
    const engines = [makeEngine({ concurrency: limit }), makeEngine({ concurrency: limit })];
    let seed = 42;
    const rand = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    const held: Array<{ id: number; lease: string; running: boolean }> = [];
    for (let step = 0; step < 120; step++) {
      const r = rand();
      if (r < 0.35) {
        await engines[0]!.enqueue(task({ number: Math.floor(rand() * 20), repo: rand() < 0.5 ? 'a' : 'b' }));
      } else if (r < 0.6) {
        const claims = await Promise.all(engines.map((e) => e.claim()));
        for (const c of claims.flat()) held.push({ id: c.run.id, lease: c.leaseToken, running: false });
      } else if (r < 0.75 && held.length > 0) {
        const h = held[Math.floor(rand() * held.length)]!;
        if (!h.running) {
          await engines[1]!.markRunning(h.id, h.lease, { workspaceId: 'w' });
          h.running = true;
        }
      } else if (r < 0.9 && held.length > 0) {
        const h = held.splice(Math.floor(rand() * held.length), 1)[0]!;
        if (h.running) await engines[0]!.complete(h.id, { status: rand() < 0.5 ? 'succeeded' : 'failed' });
        else await engines[1]!.failAttempt(h.id, h.lease, 'flaky');
        clock += 60_000;
      }
      const stats = await queries.stats();
      expect(stats.provisioning + stats.running).toBeLessThanOrEqual(limit);
    }
  });

  it('applies migrations once, also when two start together', async () => {
    const results = await Promise.all([t.store.migrate(), t.store.migrate()]);
    expect(results.flatMap((r) => r.applied)).toEqual([]);
    expect(await t.store.pendingMigrations()).toEqual([]);
  });
});
