import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { startServe, type ServeHandle } from '../helpers/baton-bin.js';
import { fixtureJson, giteaHeaders, toBody } from '../helpers/gitea-webhook.js';
import { PG_URL, postgresAvailable } from '../helpers/stores.js';
import { createTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { until } from '../helpers/until.js';

const available = await postgresAvailable();
const SECRET = 'spool-owners-webhook-secret';
const TOKEN = `spool-owners-admin-${'0123456789abcdef'.repeat(2)}`;

/** The JSON log lines of `baton serve` (LOG_LEVEL=info, not a terminal). */
function logLines(server: ServeHandle): Array<{ msg: string; [key: string]: unknown }> {
  return server
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { msg: string });
}

/** The slot a `baton serve` took at start (its log line), once it has. */
function ownSlot(server: ServeHandle): { dir: string; pending: number } | undefined {
  return logLines(server).find((l) => l.msg.startsWith('spool: this process owns')) as { dir: string; pending: number } | undefined;
}

/**
 * Two `baton serve` on one data directory (an operator starting it twice, pods of a Deployment on
 * one shared volume): each owns a slot of the spool. One is killed with kill -9 with deliveries
 * in its slot while the database is away; a third is started; once the database is back, every
 * delivery answered 202 is in the inbox exactly once: the dead one's slot was drained by one
 * process, never two.
 */
describe.skipIf(!available)('baton serve processes sharing a data directory', () => {
  let root: string | undefined;
  let proxy: TcpProxy | undefined;
  const servers: ServeHandle[] = [];
  const schema = `spool_owners_${process.pid}_${Date.now().toString(36)}`;

  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.stop('SIGKILL')));
    await proxy?.close();
    const admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
    if (root) fs.rmSync(root, { recursive: true, force: true });
  });

  async function inboxRows(): Promise<Array<{ delivery_id: string; status: string }>> {
    const admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    try {
      return (await admin.query(`SELECT delivery_id, status FROM ${schema}.inbox_deliveries ORDER BY id`)).rows;
    } finally {
      await admin.end();
    }
  }

  let issue = 0;
  /** An issue closed (it starts nothing), sent once to `server`. */
  async function deliver(server: ServeHandle): Promise<{ delivery: string; status: number; answer: unknown }> {
    const payload = fixtureJson('issues-closed.json') as { issue: { number: number } };
    payload.issue.number = ++issue;
    const body = toBody(payload);
    const delivery = randomUUID();
    const res = await fetch(`${server.url}/webhook/gitea`, {
      method: 'POST',
      headers: giteaHeaders(body, { event: 'issues', eventType: 'issues', secret: SECRET, delivery }),
      body,
    });
    return { delivery, status: res.status, answer: await res.json() };
  }

  it('gives each its own spool, and drains a killed one’s spool once, by whichever process takes it', async () => {
    const admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    await admin.query(`CREATE SCHEMA ${schema}`);
    await admin.end();
    const target = new URL(PG_URL);
    proxy = await createTcpProxy(Number(target.port || 5432), target.hostname);
    target.host = `127.0.0.1:${proxy.port}`;
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-spool-owners-'));
    const dataDir = path.join(root, 'data');
    const env = {
      DATABASE_URL: target.toString(),
      PGOPTIONS: `-c search_path=${schema}`,
      BATON_DATA_DIR: dataDir,
      WEBHOOK_SECRET: SECRET,
      BATON_BOOTSTRAP_TOKEN: TOKEN,
      WEBHOOK_ACCEPT_BUDGET_SECONDS: '0.3',
      HOST: '127.0.0.1',
    };
    const serve = async () => {
      const server = await startServe(env, root!);
      servers.push(server);
      await until(() => ownSlot(server), 'the spool slot in the log');
      return server;
    };
    const [a, b] = [await serve(), await serve()];
    const spool = path.join(dataDir, 'spool');
    expect([ownSlot(a)!.dir, ownSlot(b)!.dir]).toEqual([path.join(spool, 'slot-1'), path.join(spool, 'slot-2')]);
    // The second says whose the first slot is.
    expect(logLines(b).find((l) => l.msg.startsWith('spool: this process owns'))).toMatchObject({
      others: [{ slot: path.join(spool, 'slot-1'), owner: { pid: a.process.pid } }],
    });
    // Migrations done (not /ready: without a forge it fails, and stays so).
    for (const server of [a, b]) await until(() => logLines(server).some((l) => l.msg === 'baton started'), 'both started');

    proxy.cut();
    const answered = [await deliver(a), await deliver(a), await deliver(b)];
    expect(answered.map((d) => [d.status, d.answer])).toEqual(answered.map(() => [202, { ok: true, spooled: true }]));
    expect(fs.readdirSync(path.join(spool, 'slot-1')).filter((n) => n.endsWith('.log'))).not.toEqual([]);

    await a.stop('SIGKILL');
    // A new process while the database is still away: it takes the dead one's slot as its own,
    // or the live one takes it over first; either way one process holds those two deliveries.
    const c = await serve();
    answered.push(await deliver(c));
    expect(answered.at(-1)).toMatchObject({ status: 202, answer: { ok: true, spooled: true } });
    proxy.restore();

    await until(async () => {
      const rows = await inboxRows();
      return rows.length >= answered.length && rows.every((r) => r.status === 'processed');
    }, 'every accepted delivery processed');
    const rows = await inboxRows();
    // Each exactly once: no second copy (not even a `duplicate`) from a spool drained twice.
    expect(rows.map((r) => r.delivery_id).sort()).toEqual(answered.map((d) => d.delivery).sort());
    const takers = [b, c].filter(
      (s) =>
        logLines(s).some((l) => l.msg === 'spool: took over the slot of a process that ended' && l.from === path.join(spool, 'slot-1')) ||
        (ownSlot(s)!.dir === path.join(spool, 'slot-1') && ownSlot(s)!.pending === 2),
    );
    expect(takers).toHaveLength(1);
    for (const slot of fs.readdirSync(spool)) {
      expect(
        fs.readdirSync(path.join(spool, slot)).filter((n) => n.endsWith('.log')),
        slot,
      ).toEqual([]);
    }
    for (const server of [b, c]) expect(await server.stop('SIGTERM')).toBe(0);
  }, 180_000);
});
