import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULTS } from '../../src/runs/index.js';
import { createRunEngine, createRunQueries, type RunService, type TaskRequest, type RunQueries } from '../../src/runs/index.js';
import { applyMigrations } from '../../src/store/migrate.js';
import { migrations } from '../../src/store/migrations/index.js';
import { STORE_KINDS, type TestStore } from '../helpers/stores.js';

const available = Object.fromEntries(await Promise.all(STORE_KINDS.map(async (k) => [k.kind, await k.available()])));

/** The two repositories whose runs shared a key before 0055: `analyse-acme-web-api-6`. */
const WEB_API = { owner: 'acme', repo: 'web-api' };
const ACME_WEB = { owner: 'acme-web', repo: 'api' };

const task = (over: Partial<TaskRequest>): TaskRequest => ({ stage: 'analyse', ...WEB_API, number: 6, ...over });

describe.each(STORE_KINDS)('run keys on $kind', ({ kind, create }) => {
  let t: TestStore;
  let engine: RunService;
  let runs: RunQueries;
  let clock = 1_700_000_000_000;

  beforeEach(async (ctx) => {
    if (!available[kind]) ctx.skip();
    t = await create();
    clock = 1_700_000_000_000;
    engine = createRunEngine({ store: t.store, queue: { ...DEFAULTS.queue }, now: () => clock });
    runs = createRunQueries({ store: t.store, concurrency: DEFAULTS.queue.concurrency });
  });
  afterEach(async () => {
    await t?.cleanup();
  });

  it('keeps acme/web-api#6 and acme-web/api#6 apart: two queued runs, neither merged into the other', async () => {
    await t.store.migrate();
    const a = await engine.enqueue(task({ ...WEB_API, payload: { trigger: 'web-api' } }));
    const b = await engine.enqueue(task({ ...ACME_WEB, payload: { trigger: 'acme-web' } }));
    expect(a).toMatchObject({ outcome: 'queued', run: { key: 'analyse:acme/web-api#6' } });
    expect(b).toMatchObject({ outcome: 'queued', run: { key: 'analyse:acme-web/api#6' } });
    expect(b.run.id).not.toBe(a.run.id);
    expect(b.run.payload).toMatchObject({ trigger: 'acme-web' });
  });

  it('refuses a follow-up whose request names another repository than the live run (a caller-made key)', async () => {
    await t.store.migrate();
    const { run } = await engine.enqueue(task({ payload: { trigger: 'first' } }));
    const [claim] = await engine.claim();
    await engine.recordWorkspace(run.id, claim!.leaseToken, { workspaceName: 'ws-1', callbackTokenHash: 'x' });
    await engine.markRunning(run.id, claim!.leaseToken, { workspaceId: 'id-1' });
    await expect(engine.enqueue(task({ ...ACME_WEB, key: run.key, payload: { trigger: 'intruder' } }))).rejects.toThrow(
      'run key analyse:acme/web-api#6 belongs to acme/web-api#6, not to acme-web/api#6',
    );
    await engine.complete(run.id, { status: 'succeeded', summary: 'done' });
    // Nothing was recorded: no follow-up run, and certainly none with the other repository's payload.
    expect((await runs.list()).map((r) => r.id)).toEqual([run.id]);
  });

  it('migration 0055 rewrites the keys of existing rows from their own columns and drops follow-ups of unknown origin', async () => {
    const before = migrations.filter((m) => m.name < '0055');
    await applyMigrations(t.store.db, kind, (fn) => t.store.transaction((trx) => fn(trx)), before);
    const row = (over: Record<string, unknown>) => ({
      stage: 'analyse',
      number: 6,
      status: 'succeeded',
      payload: '{"trigger":"old"}',
      attempts: 1,
      max_attempts: 3,
      run_at: 1,
      followup: 0,
      created_at: 1,
      updated_at: 1,
      ...over,
    });
    const legacy = [
      // The pair that collided: one finished long ago, one running with a follow-up recorded
      // that may well have come from the other repository's event.
      row({ key: 'analyse-acme-web-api-6', ...WEB_API }),
      row({
        key: 'analyse-acme-web-api-6',
        ...ACME_WEB,
        status: 'running',
        payload: '{"trigger":"its own"}',
        followup: 1,
        followup_payload: '{"trigger":"from acme/web-api"}',
      }),
      // A scheduled run (its slot after one more "-"), a repository-wide one, and a key baton
      // never wrote, which stays as it is.
      row({ key: 'maintenance-acme-app-2026-11-30T09:00:00.000Z', stage: 'maintenance', owner: 'acme', repo: 'app', number: null }),
      row({ key: 'maintenance-acme-app', stage: 'maintenance', owner: 'acme', repo: 'app', number: null, status: 'queued' }),
      row({ key: 'something-else', owner: 'acme', repo: 'app', number: 9 }),
    ];
    for (const values of legacy)
      await t.store.db
        .insertInto('runs')
        .values(values as never)
        .execute();

    expect((await t.store.migrate()).applied).toContain('0055-unambiguous-run-keys');
    const rows = await t.store.db.selectFrom('runs').select(['id', 'key', 'followup', 'followup_payload']).orderBy('id').execute();
    expect(rows.map((r) => r.key)).toEqual([
      'analyse:acme/web-api#6',
      'analyse:acme-web/api#6',
      'maintenance:acme/app@2026-11-30T09:00:00.000Z',
      'maintenance:acme/app',
      'something-else',
    ]);
    expect(rows[1]).toMatchObject({ followup: 1, followup_payload: null });

    // The running run still gets its follow-up, with its own payload, under its new key; an event
    // of the other repository now queues a run of its own instead of merging into it.
    const running = rows[1]!.id;
    await engine.complete(running, { status: 'succeeded', summary: 'done' });
    const followup = (await runs.list()).find((r) => r.payload.followupOf === running);
    expect(followup).toMatchObject({ key: 'analyse:acme-web/api#6', owner: 'acme-web', repo: 'api', status: 'queued' });
    expect(followup?.payload).toMatchObject({ trigger: 'its own' });
    const other = await engine.enqueue(task({ ...WEB_API, payload: { trigger: 'new web-api event' } }));
    expect(other).toMatchObject({ outcome: 'queued', run: { owner: 'acme', repo: 'web-api' } });
  });
});
