import { sql } from 'kysely';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRunEngine, createRunQueries, DEFAULTS, ensureRunsSearch, readRunsSearch, type RunService } from '../../src/runs/index.js';
import { createStore } from '../../src/store/index.js';
import { PG_URL, postgresAvailable, STORE_KINDS, type TestStore } from '../helpers/stores.js';

/**
 * The runs list's text search reads an index, not every run (migration 0140): the FTS5 trigram
 * table on SQLite, pg_trgm indexes on PostgreSQL, and works (reading the runs) where PostgreSQL
 * may not install pg_trgm, saying so. bench/runs-list.ts measures it with 100,000 runs.
 */
const available = Object.fromEntries(await Promise.all(STORE_KINDS.map(async (k) => [k.kind, await k.available()])));

describe.each(STORE_KINDS)('runs search on $kind', ({ kind, create }) => {
  let t: TestStore;
  let engine: RunService;

  beforeEach(async (ctx) => {
    if (!available[kind]) ctx.skip();
    t = await create();
    await t.store.migrate();
    engine = createRunEngine({ store: t.store, queue: DEFAULTS.queue });
  });
  afterEach(async () => {
    await t?.cleanup();
  });

  // The list's own statement shape (src/runs/list-runs.ts). On PostgreSQL a table this small is
  // read faster than its index, so the scans of the table and of its primary key are ruled out to
  // show the trigram indexes fit the statement.
  const postgresPlan = () =>
    t.store.db.transaction().execute(async (trx) => {
      await sql`SET LOCAL enable_seqscan = off`.execute(trx);
      await sql`SET LOCAL enable_indexscan = off`.execute(trx);
      const pattern = '%zebra%';
      const { rows } = await sql<{ 'QUERY PLAN': string }>`EXPLAIN SELECT id FROM runs
        WHERE (payload::jsonb ->> 'title') ILIKE ${pattern} ESCAPE '\\' OR last_error ILIKE ${pattern} ESCAPE '\\'
          OR summary ILIKE ${pattern} ESCAPE '\\'
        ORDER BY id DESC LIMIT 50`.execute(trx);
      return rows.map((r) => r['QUERY PLAN']);
    });
  const sqlitePlan = async () => {
    const { rows } = await sql<{ detail: string }>`EXPLAIN QUERY PLAN SELECT id FROM runs
      WHERE id IN (SELECT rowid FROM runs_search WHERE runs_search MATCH ${'"zebra"'}) ORDER BY id DESC LIMIT 50`.execute(t.store.db);
    return rows.map((r) => r.detail);
  };
  const search = async (text: string) => (await createRunQueries({ store: t.store, concurrency: 1 }).list({ text })).map((r) => r.id);

  it('finds what a run says once it says it, and forgets a run that is gone', async () => {
    const a = await engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 1, payload: { title: 'Fix the Parser crash' } });
    const b = await engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 2, payload: { title: 'Other' } });
    expect(await search('parser')).toEqual([a.run.id]);
    expect(await search('timeout')).toEqual([]);
    await engine.cancel(b.run.id, 'cancelled: the upstream TIMEOUT hit');
    expect(await search('timeout')).toEqual([b.run.id]);
    // FTS5 query syntax in the search is text, not operators.
    expect(await search('"parser" OR other*')).toEqual([]);
    expect(await search('he Parser cr')).toEqual([a.run.id]);
    await t.store.db.deleteFrom('runs').where('id', '=', a.run.id).execute();
    expect(await search('parser')).toEqual([]);
  });

  it('reads the index, not every run, when the search matches nothing', async () => {
    const rows = Array.from({ length: 2_000 }, (_, i) => ({
      key: `gitea:acme/app#${i + 1}:develop:${i}`,
      stage: 'develop',
      owner: 'acme',
      repo: 'app',
      number: i + 1,
      status: 'succeeded',
      attempts: 1,
      max_attempts: 3,
      followup: 0,
      payload: JSON.stringify({ title: `Fix the cache ${i}` }),
      run_at: 1,
      created_at: 1,
      updated_at: 1,
    }));
    for (let i = 0; i < rows.length; i += 500)
      await t.store.db
        .insertInto('runs')
        .values(rows.slice(i, i + 500))
        .execute();
    await sql.raw(kind === 'postgres' ? 'ANALYZE runs' : 'ANALYZE').execute(t.store.db);
    const query = createRunQueries({ store: t.store, concurrency: 1 });
    expect(await query.list({ text: 'zebra' })).toEqual([]);
    expect(await query.list({ text: 'cache 1999' })).toHaveLength(1);
    const plan = kind === 'postgres' ? await postgresPlan() : await sqlitePlan();
    expect(plan.join('\n')).toMatch(kind === 'postgres' ? /Bitmap Index Scan on runs_search_title/ : /VIRTUAL TABLE INDEX/);
    expect(await ensureRunsSearch(t.store)).toBeNull();
    expect(await readRunsSearch(t.store)).toBeNull();
  });
});

describe('runs search on PostgreSQL without pg_trgm', () => {
  const suffix = `${process.pid}_${Date.now().toString(36)}`;
  const database = `baton_notrgm_${suffix}`;
  const role = `baton_plain_${suffix}`;
  const admin = (url = PG_URL) => new pg.Client({ connectionString: url });
  const on = (db: string) => PG_URL.replace(/\/[^/]*$/, `/${db}`);

  beforeEach(async (ctx) => {
    if (!(await postgresAvailable())) ctx.skip();
    const client = admin();
    await client.connect();
    await client.query(`CREATE ROLE ${role} LOGIN`);
    // Owned by the superuser: the role may not create an extension (not even a trusted one) there.
    await client.query(`CREATE DATABASE ${database}`);
    await client.end();
    const inside = admin(on(database));
    await inside.connect();
    await inside.query(`CREATE SCHEMA baton AUTHORIZATION ${role}`);
    await inside.end();
  });
  afterEach(async () => {
    const client = admin();
    await client.connect();
    await client.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await client.query(`DROP ROLE IF EXISTS ${role}`);
    await client.end();
  });

  it('migrates, searches by reading the runs, warns with what to do, and uses the extension from the next start', async () => {
    const url = on(database).replace('//postgres@', `//${role}@`);
    const store = createStore({ url, schema: 'baton' });
    try {
      await store.migrate();
      const warning = await ensureRunsSearch(store);
      expect(warning).toMatch(/^the runs search reads every run: CREATE EXTENSION pg_trgm failed: permission denied .*SQLSTATE 42501/);
      expect(warning).toContain('a superuser can run CREATE EXTENSION pg_trgm SCHEMA public in this database');
      expect(warning).toContain('docs/troubleshooting.md#slow-search');
      expect(await readRunsSearch(store)).toMatch(/pg_trgm is not installed in this database and baton's user may not install it/);
      const engine = createRunEngine({ store, queue: DEFAULTS.queue });
      const { run } = await engine.enqueue({
        stage: 'develop',
        owner: 'acme',
        repo: 'app',
        number: 1,
        payload: { title: 'Fix the parser' },
      });
      expect((await createRunQueries({ store, concurrency: 1 }).list({ text: 'PARSER' })).map((r) => r.id)).toEqual([run.id]);

      const client = admin(on(database));
      await client.connect();
      await client.query('CREATE EXTENSION pg_trgm SCHEMA public');
      await client.end();
      expect(await ensureRunsSearch(store)).toBeNull();
      expect(await readRunsSearch(store)).toBeNull();
    } finally {
      await store.close();
    }
  });
});
