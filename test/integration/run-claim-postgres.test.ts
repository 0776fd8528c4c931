import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULTS, type QueueConfig } from '../../src/runs/index.js';
import {
  createRunEngine,
  createRunQueries,
  NOTIFY_CHANNEL,
  type RunService,
  type TaskRequest,
  type RunQueries,
} from '../../src/runs/index.js';
import { createPostgresTestStore, PG_URL, postgresAvailable, type TestStore } from '../helpers/stores.js';
import { schemaChannel } from '../../src/store/index.js';
import { until } from '../helpers/until.js';

const available = await postgresAvailable();
const task = (number: number): TaskRequest => ({ stage: 'develop', owner: 'acme', repo: 'app', number });

/**
 * The PostgreSQL claim in one round trip (claim.ts `claimInOneTrip`) and the hints to other
 * replicas (engine.ts `hintReplicas`): what an engine without hooks does on PostgreSQL.
 */
describe('run engine on PostgreSQL, one-trip claims and replica hints', () => {
  let t: TestStore;
  let engine: RunService;
  let runs: RunQueries;
  let other: pg.Client | undefined;
  const queue: QueueConfig = { ...DEFAULTS.queue, concurrency: 2 };

  beforeEach(async (ctx) => {
    if (!available) ctx.skip();
    t = await createPostgresTestStore();
    await t.store.migrate();
    engine = createRunEngine({ store: t.store, queue });
    runs = createRunQueries({ store: t.store, concurrency: queue.concurrency });
    // Another replica's connection.
    other = new pg.Client({ connectionString: PG_URL, options: `-c search_path=${t.schema}` });
    await other.connect();
  });
  afterEach(async () => {
    await other?.end();
    other = undefined;
    await t?.cleanup();
  });

  it("counts the slots another replica's claim took while it waited for the lock", async () => {
    for (let n = 1; n <= 4; n++) await engine.enqueue(task(n));
    // Another replica's claim, in progress: it holds the lock and has taken both slots.
    await other!.query('BEGIN');
    await other!.query('SELECT paused FROM dispatch_state WHERE id = 1 FOR UPDATE');
    await other!.query(
      `UPDATE runs SET status = 'provisioning', lease_token = 'elsewhere' WHERE id IN (SELECT id FROM runs ORDER BY id LIMIT 2)`,
    );
    const claim = engine.claim();
    await until(async () => {
      // Inside a transaction the activity view is a snapshot taken once: take a fresh one.
      await other!.query('SELECT pg_stat_clear_snapshot()');
      return (await other!.query('SELECT 1 FROM pg_stat_activity WHERE pg_backend_pid() = ANY (pg_blocking_pids(pid))')).rowCount;
    }, 'the claim to wait for the lock');
    await other!.query('COMMIT');
    // A claim whose count of slots in use was read before the lock would take two more runs.
    expect(await claim).toEqual([]);
    expect((await runs.list()).filter((r) => r.status === 'provisioning')).toHaveLength(2);
  });

  it('claims nothing while paused, and in order once resumed', async () => {
    for (let n = 1; n <= 3; n++) await engine.enqueue(task(n));
    await engine.pause();
    expect(await engine.claim()).toEqual([]);
    await engine.resume();
    const claimed = await engine.claim();
    expect(claimed.map((c) => c.run.number)).toEqual([1, 2]);
    expect(claimed.every((c) => c.run.status === 'provisioning' && c.run.attempts === 1)).toBe(true);
    const events = await runs.events(claimed[0]!.run.id);
    expect(events.map((e) => [e.type, e.data])).toEqual([
      ['run:queued', null],
      ['run:claimed', { attempt: 1 }],
    ]);
  });

  it('hints other replicas "wake" for new work and "events" for a freed slot, which this replica fills', async () => {
    const hints: string[] = [];
    other!.on('notification', (message) => hints.push(message.payload ?? ''));
    // The channel is the schema's own: other batons' hints, in other schemas of the database, are not heard.
    await other!.query(`LISTEN "${await schemaChannel(other!, NOTIFY_CHANNEL)}"`);
    // One step at a time, each waiting for its hint, so no two steps share one.
    const step = async (action: () => Promise<unknown>): Promise<string> => {
      const before = hints.length;
      await action();
      await until(() => hints.length > before, 'the hint of the step');
      return hints.slice(before).join(',');
    };
    let run = (await engine.enqueue(task(1))).run;
    expect(hints).toEqual([]);
    await until(() => hints.length > 0, 'the enqueue to hint');
    expect(hints).toEqual(['wake']);
    const [claim] = await Promise.all([engine.claim(), until(() => hints.length > 1, 'the claim to hint')]);
    expect(hints[1]).toBe('events');
    expect(await step(() => engine.markRunning(run.id, claim![0]!.leaseToken, { workspaceId: 'w' }))).toBe('events');
    const local: string[] = [];
    engine.on('queue:wake', () => local.push('queue:wake'));
    expect(await step(() => engine.complete(run.id, { status: 'succeeded' }))).toBe('events');
    expect(local).toEqual(['queue:wake']);
    run = (await engine.enqueue(task(2))).run;
    await until(() => hints.length > 4, 'the second enqueue to hint');
    expect(hints.slice(4)).toEqual(['wake']);
  });

  it('claims by reading a few pages, however many runs are queued', async () => {
    // Pages a claim of one run reads (buffers, nested statements included), in a transaction that
    // is rolled back so every claim sees the same queue. Eight claims on one connection: past the
    // five after which PostgreSQL may switch a function's statements to their generic plans.
    const pagesPerClaim = async (): Promise<number[]> => {
      const pages: number[] = [];
      for (let i = 0; i < 8; i++) {
        await other!.query('BEGIN');
        const { rows } = await other!.query<{ 'QUERY PLAN': Array<{ Plan: Record<string, number> }> }>(
          `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT * FROM baton_claim_runs($1, 1, 10, 'lease', $1)`,
          [Date.now()],
        );
        await other!.query('ROLLBACK');
        const plan = rows[0]!['QUERY PLAN'][0]!.Plan;
        pages.push(plan['Shared Hit Blocks']! + plan['Shared Read Blocks']!);
      }
      return pages.slice(1); // the first also reads the catalog into the new connection's caches
    };
    const enqueueMany = (from: number, to: number) =>
      other!.query(
        `INSERT INTO runs (key, stage, owner, repo, number, status, payload, attempts, max_attempts, run_at, followup, created_at, updated_at)
         SELECT 'develop:acme/app#' || n, 'develop', 'acme', 'app', n, 'queued', '{}', 0, 3, n, 0, n, n FROM generate_series($1::int, $2::int) AS n`,
        [from, to],
      );
    await enqueueMany(1, 20);
    await other!.query('ANALYZE runs');
    const few = Math.max(...(await pagesPerClaim()));
    await enqueueMany(21, 20_000);
    await other!.query('ANALYZE runs');
    const many = await pagesPerClaim();
    // A claim that joined its candidates to every queued run read hundreds of pages more here. A
    // thousand times the runs deepens each index it walks by a level and may switch the function to
    // its generic plan: measured 30 pages with 20 runs, 39 to 41 with 20,000.
    expect(Math.max(...many)).toBeLessThan(few * 2);
  });

  it("claims, starts and ends runs as stored, also once another replica's migration has added a column to runs", async () => {
    for (let n = 1; n <= 2; n++) await engine.enqueue(task(n));
    const step = async (n: number) => {
      const [claim] = await engine.claim(1);
      expect(claim!.run.number).toBe(n);
      const started = await engine.markRunning(claim!.run.id, claim!.leaseToken, { workspaceId: `w${n}` });
      const { run: ended } = await engine.complete(claim!.run.id, { status: 'succeeded', exitCode: 0 });
      // What each step returned is the row and the events as stored.
      expect(ended).toEqual(await runs.get(claim!.run.id));
      expect(started).toMatchObject({ status: 'running', workspaceId: `w${n}`, startedAt: ended.startedAt });
      const events = await runs.events(claim!.run.id);
      expect(events.map((e) => [e.type, e.fromStatus, e.toStatus])).toEqual([
        ['run:queued', null, 'queued'],
        ['run:claimed', 'queued', 'provisioning'],
        ['run:started', 'provisioning', 'running'],
        ['run:succeeded', 'running', 'succeeded'],
      ]);
    };
    await step(1);
    // The statements are prepared on this replica's connections by now.
    await other!.query('ALTER TABLE runs ADD COLUMN added_by_a_newer_replica text');
    await step(2);
  });
});
