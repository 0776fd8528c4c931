import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/server/index.js';
import { createApp, type App } from '../../src/server/index.js';
import { createStore, type PostgresTimeouts } from '../../src/store/index.js';
import { createMemoryProvider } from '../../src/workspaces/index.js';
import { silentLogger } from '../helpers/logger.js';
import { createTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { PG_URL, postgresAvailable } from '../helpers/stores.js';
import { until } from '../helpers/until.js';

const available = await postgresAvailable();

describe.skipIf(!available)('a PostgreSQL outage while running', () => {
  let proxy: TcpProxy | undefined;
  let app: App | undefined;
  let dir: string | undefined;
  const schema = `outage_${process.pid}_${Date.now().toString(36)}`;

  afterEach(async () => {
    await app?.stop();
    await proxy?.close();
    const admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  /** An app whose PostgreSQL connections go through a proxy the test can cut. */
  async function appBehindProxy(options: { cutFirst: boolean; timeouts?: PostgresTimeouts }): Promise<App> {
    const admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    await admin.query(`CREATE SCHEMA ${schema}`);
    await admin.end();
    const target = new URL(PG_URL);
    proxy = await createTcpProxy(Number(target.port || 5432), target.hostname);
    if (options.cutFirst) proxy.cut();
    target.host = `127.0.0.1:${proxy.port}`;
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-outage-'));
    const { config } = loadConfig({ BATON_DATA_DIR: dir, DATABASE_URL: target.toString() }, dir);
    const store = createStore({ url: target.toString(), schema, timeouts: options.timeouts });
    return createApp(
      { ...config, queue: { ...config.queue, pollMs: 100 } },
      { logger: silentLogger, store, provider: createMemoryProvider() },
    );
  }

  it('turns /ready to 503 naming the database, crashes nothing, and resumes work when it returns', async () => {
    app = await appBehindProxy({ cutFirst: false });
    await app.start();
    expect((await app.hono.request('/ready')).status).toBe(200);

    proxy!.cut();
    const down = await app.hono.request('/ready');
    expect(down.status).toBe(503);
    expect(await down.json()).toMatchObject({ failing: expect.arrayContaining(['database']) });
    // Work accepted during the outage is refused loudly rather than lost silently.
    await expect(app.engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 1 })).rejects.toThrow();
    // The workers keep trying to reach the database meanwhile, and fail.
    const refused = proxy!.refused;
    await until(() => proxy!.refused >= refused + 2, 'the app to try the database again while it is down');

    proxy!.restore();
    await until(async () => (await app!.hono.request('/ready')).status === 200, 'ready again');
    const { run } = await app.engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 1 });
    await until(async () => (await app!.runs.get(run.id))?.status === 'running', 'the run to be dispatched');
  });

  it('keeps retrying a database that is unreachable at start, and starts once it answers', async () => {
    app = await appBehindProxy({ cutFirst: true });
    let started = false;
    const starting = app.start().then(() => (started = true));
    await until(() => proxy!.refused >= 2, 'start to try the database a second time');
    expect(started).toBe(false);
    const down = await app.hono.request('/ready');
    expect(down.status).toBe(503);
    expect(await down.json()).toMatchObject({ failing: expect.arrayContaining(['database']) });

    proxy!.restore();
    await starting;
    expect((await app.hono.request('/ready')).status).toBe(200);
  });

  it('answers /ready within a second while the database stalls, and drops the stalled connections so work resumes', async () => {
    app = await appBehindProxy({ cutFirst: false, timeouts: { connectMs: 1_000, statementMs: 1_000, idleInTransactionMs: 5_000 } });
    await app.start();
    expect((await app.hono.request('/ready')).status).toBe(200);

    proxy!.stall();
    const asked = Date.now();
    const down = await app.hono.request('/ready');
    expect(Date.now() - asked, '/ready answered in time').toBeLessThan(1_000);
    expect(down.status).toBe(503);
    expect(await down.json()).toMatchObject({ failing: expect.arrayContaining(['database']) });
    // Taking webhooks needs only the spool while the database is away: the load balancer keeps
    // the replica (a forge sends each webhook once), and the delivery is spooled.
    const ingress = await app.hono.request('/ready/ingress');
    expect(ingress.status, JSON.stringify(await ingress.clone().json())).toBe(200);
    // A statement sent into the stall fails within its timeout plus the read margin instead of
    // waiting for TCP, and its connection is dropped rather than handed out again.
    const started = Date.now();
    await expect(app.engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 1 })).rejects.toThrow();
    expect(Date.now() - started).toBeLessThan(10_000);

    proxy!.restore();
    await until(async () => (await app!.hono.request('/ready')).status === 200, 'ready again');
    const { run } = await app.engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 2 });
    await until(async () => (await app!.runs.get(run.id))?.status === 'running', 'the run to be dispatched');
  });
});
