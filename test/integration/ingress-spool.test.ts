import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/server/index.js';
import { createApp, type App } from '../../src/server/index.js';
import { createStore } from '../../src/store/index.js';
import { createMemoryProvider } from '../../src/workspaces/index.js';
import { ADMIN_TOKEN, bearer } from '../helpers/app.js';
import { fixtureJson, giteaHeaders, toBody } from '../helpers/gitea-webhook.js';
import { githubExample, githubHeaders } from '../helpers/github-webhook.js';
import { gitlabExample, gitlabHeaders } from '../helpers/gitlab-webhook.js';
import { silentLogger } from '../helpers/logger.js';
import { PG_URL, postgresAvailable } from '../helpers/stores.js';
import { createTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { until } from '../helpers/until.js';

const available = await postgresAvailable();
const SECRET = 'spool-webhook-secret';
const GITHUB_SECRET = 'spool-github-secret';
const GITLAB_SECRET = 'spool-gitlab-secret';

/**
 * The accept path never depends on the database: a delivery the database cannot store within the
 * accept budget (cut, stalled, flapping) is spooled on the replica's disk and answered 202, and
 * reaches the inbox, once, in the order it arrived, when the database answers again.
 */
/** The spool's segments, in every process's slot. */
function segmentFiles(spoolDir: string): string[] {
  return fs.readdirSync(spoolDir).flatMap((slot) => fs.readdirSync(path.join(spoolDir, slot)).filter((n) => n.endsWith('.log')));
}

describe.skipIf(!available)('the webhook spool, with PostgreSQL away', () => {
  let proxy: TcpProxy | undefined;
  let app: App | undefined;
  let dir: string | undefined;
  const schema = `spool_${process.pid}_${Date.now().toString(36)}`;

  afterEach(async () => {
    await app?.stop();
    await proxy?.close();
    const admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  async function appBehindProxy(): Promise<App> {
    const admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    await admin.query(`CREATE SCHEMA ${schema}`);
    await admin.end();
    const target = new URL(PG_URL);
    proxy = await createTcpProxy(Number(target.port || 5432), target.hostname);
    target.host = `127.0.0.1:${proxy.port}`;
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-spool-app-'));
    const { config } = loadConfig(
      {
        BATON_DATA_DIR: dir,
        DATABASE_URL: target.toString(),
        WEBHOOK_SECRET: SECRET,
        BATON_BOOTSTRAP_TOKEN: ADMIN_TOKEN,
        WEBHOOK_ACCEPT_BUDGET_SECONDS: '0.3',
        GITHUB_URL: 'https://github.example',
        GITHUB_WEBHOOK_SECRET: GITHUB_SECRET,
        GITHUB_DEV_TOKEN: 'github-dev-token',
        GITLAB_URL: 'https://gitlab.example',
        GITLAB_WEBHOOK_SECRET: GITLAB_SECRET,
        GITLAB_DEV_TOKEN: 'gitlab-dev-token',
        LOG_LEVEL: 'silent',
      },
      dir,
    );
    const store = createStore({
      url: target.toString(),
      schema,
      timeouts: { connectMs: 500, statementMs: 1_000, idleInTransactionMs: 5_000 },
    });
    return createApp(
      { ...config, queue: { ...config.queue, pollMs: 100 } },
      { logger: silentLogger, store, provider: createMemoryProvider() },
    );
  }

  let sent = 0;
  /** An issue opened (no trigger label: each is processed to `ignored`), its own number and delivery id. */
  async function deliver(): Promise<{ delivery: string; status: number; answer: Record<string, unknown> }> {
    const number = ++sent;
    const payload = fixtureJson('issues-opened.json') as { issue: { number: number; title: string } };
    payload.issue.number = number;
    payload.issue.title = `storm ${number}`;
    const body = toBody(payload);
    const delivery = `spool-${number}`;
    const response = await app!.hono.request('/webhook/gitea', {
      method: 'POST',
      headers: giteaHeaders(body, { event: 'issues', eventType: 'issues', secret: SECRET, delivery }),
      body,
    });
    return { delivery, status: response.status, answer: (await response.json()) as Record<string, unknown> };
  }

  async function inboxRows(): Promise<Array<{ delivery_id: string; status: string; outcome: string | null; id: number }>> {
    const admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    try {
      return (await admin.query(`SELECT id, delivery_id, status, outcome FROM ${schema}.inbox_deliveries ORDER BY id`)).rows;
    } finally {
      await admin.end();
    }
  }

  it('answers 202 through a cut, a stall and flaps, and every accepted delivery is processed once, in order', async () => {
    app = await appBehindProxy();
    await app.start();
    const answers: Array<Awaited<ReturnType<typeof deliver>>> = [];
    // The database is there: stored in it (or, on a machine too busy to commit within the budget, spooled).
    answers.push(await deliver());
    expect(answers[0]).toMatchObject({ status: 202, answer: { ok: true } });

    proxy!.cut();
    for (let i = 0; i < 5; i++) answers.push(await deliver());
    proxy!.restore();
    proxy!.stall();
    const stalledAt = Date.now();
    answers.push(...(await Promise.all([deliver(), deliver(), deliver()])));
    // The budget (0.3 s) and a spool write: within Gitea's 5 s, however long the stall.
    expect(Date.now() - stalledAt).toBeLessThan(5_000);
    proxy!.restore();
    for (let flap = 0; flap < 3; flap++) {
      proxy!.cut();
      answers.push(await deliver());
      proxy!.restore();
      answers.push(await deliver());
    }

    for (const a of answers) expect(a.status, `${a.delivery}: ${JSON.stringify(a.answer)}`).toBe(202);
    expect(answers.filter((a) => a.answer.spooled === true).length).toBeGreaterThanOrEqual(8);

    // The token check needs the database, which is back: health shows the spool at work or done.
    const health = await app.hono.request('/api/deliveries/health', { headers: bearer() });
    expect(await health.json()).toMatchObject({ spool: { refused: 0, setAside: 0 } });

    // Each accepted delivery reaches the inbox and is processed once: any second copy (an insert
    // that committed after its delivery was spooled) is a `duplicate`.
    await until(
      async () => {
        const rows = await inboxRows();
        return rows.length >= answers.length && rows.every((r) => r.status === 'processed');
      },
      'every accepted delivery processed',
      60_000,
      200,
    );
    const rows = await inboxRows();
    const effective = rows.filter((r) => r.outcome !== 'duplicate');
    expect(effective.map((r) => r.delivery_id).sort()).toEqual(answers.map((a) => a.delivery).sort());
    // Spooled deliveries keep their arrival order among themselves.
    const spooledOrder = answers.filter((a) => a.answer.spooled === true).map((a) => a.delivery);
    const inboxOrder = effective.map((r) => r.delivery_id).filter((d) => spooledOrder.includes(d));
    expect(inboxOrder).toEqual(spooledOrder);
    expect(segmentFiles(path.join(dir!, 'spool'))).toEqual([]);

    const metrics = await (await app.hono.request('/metrics', { headers: bearer() })).text();
    expect(metrics).toMatch(/^baton_ingress_refused_total 0$/m);
  });

  it('drains at start what a replica that ended left in its spool', async () => {
    app = await appBehindProxy();
    proxy!.cut();
    // Not started: the database is away from the beginning, as after a restart into an outage.
    const first = await deliver();
    const second = await deliver();
    expect([first.answer, second.answer]).toEqual([
      { ok: true, spooled: true },
      { ok: true, spooled: true },
    ]);
    // Another process over the same data directory once this one has ended (a kill -9 of a real
    // `baton serve` is in test/e2e/spool-owners.test.ts; stopping leaves the spool as it is too).
    const spoolDir = path.join(dir!, 'spool');
    expect(segmentFiles(spoolDir)).not.toEqual([]);
    await app.stop();
    app = undefined;
    proxy!.restore();
    const { config } = loadConfig({ BATON_DATA_DIR: dir!, DATABASE_URL: PG_URL, WEBHOOK_SECRET: SECRET, LOG_LEVEL: 'silent' }, dir!);
    app = createApp(config, { logger: silentLogger, store: createStore({ url: PG_URL, schema }), provider: createMemoryProvider() });
    await app.start();
    await until(async () => (await inboxRows()).filter((r) => r.status === 'processed').length === 2, 'both spooled deliveries processed');
    expect((await inboxRows()).map((r) => r.delivery_id)).toEqual([first.delivery, second.delivery]);
    expect(segmentFiles(spoolDir)).toEqual([]);
  });

  it("keeps GitHub's and GitLab's deliveries in the same spool while the database is away", async () => {
    app = await appBehindProxy();
    await app.start();
    proxy!.cut();
    const gitea = await deliver();
    const body = JSON.stringify(githubExample('issues', 'opened'));
    const guid = '5d1c5f5e-0000-4000-8000-000000000025';
    const response = await app.hono.request('/webhook/github', {
      method: 'POST',
      headers: githubHeaders(body, { event: 'issues', secret: GITHUB_SECRET, delivery: guid }),
      body,
    });
    expect(response.status).toBe(202);
    expect(await response.json()).toEqual({ ok: true, spooled: true });
    const gitlabBody = JSON.stringify(gitlabExample('issue'));
    const key = '0b4c7f0e-0000-4000-8000-000000000026';
    const fromGitLab = await app.hono.request('/webhook/gitlab', {
      method: 'POST',
      headers: gitlabHeaders({ event: 'Issue Hook', token: GITLAB_SECRET, idempotencyKey: key }),
      body: gitlabBody,
    });
    // GitLab disables a hook after 4 failures in a row: a database away is no failure of the hook.
    expect(fromGitLab.status).toBe(202);
    expect(await fromGitLab.json()).toEqual({ ok: true, spooled: true });
    expect(gitea.answer).toEqual({ ok: true, spooled: true });
    proxy!.restore();
    await until(
      async () => {
        // In the inbox is what the spool promises (their effect is the worker's: no forge answers here).
        const ids = new Set((await inboxRows()).map((r) => r.delivery_id));
        return ids.size >= 3;
      },
      'the three spooled deliveries in the inbox',
      60_000,
      200,
    );
    // One spool, in arrival order, each forge's delivery under its own id.
    expect((await inboxRows()).map((r) => r.delivery_id)).toEqual([gitea.delivery, `123456789:${guid}`, `gitlab:${key}`]);
  });
});
