import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { createIngressState } from '../../src/ingress/index.js';
import { applyMigrations } from '../../src/store/migrate.js';
import { migrations } from '../../src/store/migrations/index.js';
import { giteaHeaders, readFixture } from '../helpers/gitea-webhook.js';
import { createIngressHarness, type IngressHarness } from '../helpers/ingress.js';
import { STORE_KINDS, type TestStore } from '../helpers/stores.js';

const SECRET = 'http-secret';
const available = Object.fromEntries(await Promise.all(STORE_KINDS.map(async (k) => [k.kind, await k.available()])));

/** Raw node:http request, so the test controls chunking and Content-Length exactly. */
function rawPost(
  port: number,
  headers: Record<string, string>,
  write: (req: http.ClientRequest) => void,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: '/webhook/gitea', method: 'POST', headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    write(req);
  });
}

describe('ingress behind a real HTTP server', () => {
  let h: IngressHarness | undefined;
  let server: ReturnType<typeof serve> | undefined;

  afterEach(async () => {
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    server = undefined;
    await h?.cleanup();
    h = undefined;
  });

  async function start(): Promise<number> {
    h = await createIngressHarness({ secret: SECRET });
    const app = h.app;
    return new Promise((resolve) => {
      server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, (info: AddressInfo) => resolve(info.port));
    });
  }

  it('queues a run for a signed delivery over HTTP', async () => {
    const port = await start();
    const body = readFixture('issues-opened.json');
    const res = await fetch(`http://127.0.0.1:${port}/webhook/gitea`, {
      method: 'POST',
      body,
      headers: giteaHeaders(body, { event: 'issues', eventType: 'issues', secret: SECRET }),
    });
    expect(res.status).toBe(202);
    const { id } = (await res.json()) as { id: number };
    expect(await h!.processed(id)).toMatchObject({ outcome: 'started', stages: ['analyse'] });
  });

  it('answers 413 to a chunked body over the limit (no Content-Length to trust) and keeps serving', async () => {
    const port = await start();
    const headers = giteaHeaders(Buffer.from('x'), { event: 'issues', eventType: 'issues', secret: SECRET });
    const res = await rawPost(port, { ...headers, 'Transfer-Encoding': 'chunked' }, (req) => {
      const chunk = Buffer.alloc(256 * 1024, 0x20);
      let sent = 0;
      const pump = () => {
        while (sent < 24) {
          sent += 1;
          if (!req.write(chunk)) return void req.once('drain', pump);
        }
        req.end();
      };
      req.on('error', () => {});
      pump();
    }).catch((err: Error) => ({ status: -1, body: err.message }));
    // The server answers before reading everything; the client may see the 413 or a reset.
    if (res.status !== -1) {
      expect(res.status).toBe(413);
      expect(JSON.parse(res.body)).toEqual({ error: { code: 'too_large', message: 'body is larger than the limit of 5242880 bytes' } });
    }
    const body = readFixture('issues-opened.json');
    const after = await fetch(`http://127.0.0.1:${port}/webhook/gitea`, {
      method: 'POST',
      body,
      headers: giteaHeaders(body, { event: 'issues', eventType: 'issues', secret: SECRET }),
    });
    expect(after.status).toBe(202);
  });

  it('answers 413 from a declared Content-Length before reading the body', async () => {
    const port = await start();
    const headers = giteaHeaders(Buffer.from('x'), { event: 'issues', eventType: 'issues', secret: SECRET });
    const res = await rawPost(port, { ...headers, 'Content-Length': String(6 * 1024 * 1024) }, (req) => {
      req.on('error', () => {});
      req.write('{');
    });
    expect(res.status).toBe(413);
  });
});

describe.each(STORE_KINDS)('ingress tables on $kind', ({ kind, create }) => {
  let t: TestStore | undefined;
  afterEach(async () => {
    await t?.cleanup();
    t = undefined;
  });

  it('migration 0080 drops the delivery ids of the old dedup (the inbox dedups now) and keeps the label memory', async (ctx) => {
    if (!available[kind]) ctx.skip();
    t = await create();
    const { store } = t;
    const listed =
      kind === 'sqlite'
        ? sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'table'`
        : sql<{ name: string }>`SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema()`;
    const tables = async () => (await listed.execute(store.db)).rows.map((r) => r.name);
    const before = migrations.filter((m) => m.name < '0080');
    await applyMigrations(store.db, kind, (fn) => store.transaction((trx) => fn(trx)), before);
    expect(await tables()).toEqual(expect.arrayContaining(['webhook_deliveries', 'webhook_labels']));
    await store.migrate();
    expect(await tables()).not.toContain('webhook_deliveries');
    expect(await tables()).toContain('webhook_labels');
  });

  it('acts on an event once and starts a stage only for a newly present label, end to end', async (ctx) => {
    if (!available[kind]) ctx.skip();
    const h = await createIngressHarness({ secret: SECRET, store: create });
    try {
      const opened = readFixture('issues-opened.json');
      const headers = giteaHeaders(opened, { event: 'issues', eventType: 'issues', secret: SECRET, delivery: 'e2e-1' });
      expect((await h.post('/webhook/gitea', opened, headers)).delivery).toMatchObject({ outcome: 'started', stages: ['analyse'] });
      expect((await h.post('/webhook/gitea', opened, headers)).delivery).toMatchObject({ outcome: 'duplicate' });
      const labelled = readFixture('issues-label_updated.json');
      const label = () => giteaHeaders(labelled, { event: 'issues', eventType: 'issue_label', secret: SECRET });
      expect((await h.post('/webhook/gitea', labelled, label())).delivery).toMatchObject({ outcome: 'started', stages: ['develop'] });
      // The same label event again: a redelivery (new id) of the same body, then to a legacy path.
      expect((await h.post('/webhook/gitea', labelled, label())).delivery).toMatchObject({ outcome: 'duplicate' });
      expect((await h.post('/webhook/gitea-issue-label', labelled, label())).delivery).toMatchObject({ outcome: 'duplicate' });
      expect((await h.runs.list()).map((r) => r.stage).sort()).toEqual(['analyse', 'develop']);
    } finally {
      await h.cleanup();
    }
  });

  it('remembers labels per route scope and issue, case-insensitively by repository', async (ctx) => {
    if (!available[kind]) ctx.skip();
    t = await create();
    await t.store.migrate();
    const state = createIngressState(t.store);
    const issue = { owner: 'Acme', repo: 'App', number: 7 };
    expect(await state.labelsSeen('gitea', issue)).toBeNull();
    await state.rememberLabels('gitea', issue, ['bug']);
    await state.rememberLabels('gitea', { owner: 'acme', repo: 'app', number: 7 }, ['bug', 'ready-for-development']);
    expect(await state.labelsSeen('gitea', issue)).toEqual(['bug', 'ready-for-development']);
    expect(await state.labelsSeen('gitea-release', issue)).toBeNull();
    expect(await state.labelsSeen('gitea', { ...issue, number: 8 })).toBeNull();
  });
});
