import { afterEach, describe, expect, it } from 'vitest';
import { createGiteaClient } from '../../src/forge/index.js';
import { createGiteaIngress, createInboxStore, type Delivery } from '../../src/ingress/index.js';
import { createFakeGitea, type FakeGitea } from '../fakes/gitea/index.js';
import { startTestApp, bearer, type TestApp } from '../helpers/app.js';
import { spawnTs, type ChildHandle } from '../helpers/child.js';
import { processedDelivery } from '../helpers/deliveries.js';
import { fixtureJson, giteaHeaders, toBody } from '../helpers/gitea-webhook.js';
import { createIngressHarness, type IngressHarness } from '../helpers/ingress.js';
import { STORE_KINDS, type TestStore } from '../helpers/stores.js';
import { until } from '../helpers/until.js';

/**
 * The inbox keeps every accepted delivery and processes each
 * once, whatever the forge API or the worker does meanwhile.
 */
const SECRET = 'inbox-processing-secret';
const available = Object.fromEntries(await Promise.all(STORE_KINDS.map(async (k) => [k.kind, await k.available()])));
const CHILD = 'test/fixtures/inbox-worker-child.ts';

/** A signed "issue opened" delivery for issue `number` of acme/app, by `sender`. */
function opened(number: number, sender = 'alice'): { body: Buffer; headers: (delivery?: string) => Record<string, string> } {
  const payload = fixtureJson('issues-opened.json');
  const issue = payload.issue as Record<string, unknown>;
  issue.number = number;
  issue.title = `issue ${number}`;
  payload.number = number;
  payload.sender = { ...(payload.sender as Record<string, unknown>), login: sender, username: sender };
  const body = toBody(payload);
  return { body, headers: (delivery) => giteaHeaders(body, { event: 'issues', eventType: 'issues', secret: SECRET, delivery }) };
}

let gitea: FakeGitea | undefined;
let h: IngressHarness | undefined;
let server: TestApp | undefined;
let t: TestStore | undefined;
const children: ChildHandle[] = [];

afterEach(async () => {
  await Promise.all(children.splice(0).map((c) => c.kill()));
  await server?.close();
  await h?.cleanup();
  await gitea?.close();
  await t?.cleanup();
  server = h = gitea = t = undefined;
});

describe.each(STORE_KINDS)('the inbox on $kind', ({ kind, create }) => {
  it('accepts a stream of deliveries while the forge API is down, and processes each once when it is back', async (ctx) => {
    if (!available[kind]) ctx.skip();
    gitea = await createFakeGitea();
    const bot = gitea.addUser('claude-dev');
    gitea.addUser('alice');
    gitea.addRepo('acme', 'app');
    // A repository admin may read other users' permission (reference/gitea/API.md).
    gitea.addCollaborator('acme', 'app', 'claude-dev', 'admin');
    gitea.addCollaborator('acme', 'app', 'alice', 'write');
    const client = createGiteaClient({ baseUrl: gitea.url, token: bot.token, timeoutMs: 2_000 });
    h = await createIngressHarness({
      secret: SECRET,
      store: create,
      webhooks: { requireWritePermission: true, permissionCacheSeconds: 0, retryMaxSeconds: 1 },
      permissionOf: (owner, repo, user) => client.getUserPermission(owner, repo, user),
    });

    // Down: every API call answers 503 (and, for a few, the connection drops).
    gitea.failNext(Number.MAX_SAFE_INTEGER, { status: 503 });
    const accepted: number[] = [];
    for (let n = 1; n <= 12; n++) {
      const { body, headers } = opened(n);
      const res = await h.post('/webhook/gitea', body, headers(), { wait: false });
      expect(res.status).toBe(202);
      accepted.push(res.body.id as number);
      // Gitea's manual "Redeliver" of a few of them: the same body under a new delivery id.
      if (n % 4 === 0) {
        const again = await h.post('/webhook/gitea', body, headers(), { wait: false });
        expect(again.status).toBe(202);
        accepted.push(again.body.id as number);
      }
    }
    // The worker has met the outage (several failed lookups, retried) and processed nothing.
    await until(() => gitea!.requests.filter((r) => r.status === 503).length >= 6, 'lookups failing during the outage');
    expect(await h.runs.list()).toEqual([]);
    expect((await h.processing.inbox.counts()).processed).toBe(0);

    gitea.clearFaults();
    const done: Delivery[] = [];
    for (const id of accepted) done.push(await h.processed(id));
    const runs = await h.runs.list();
    // One run per issue, each started by exactly one delivery; the redeliveries had no effect.
    expect(runs.map((r) => r.number).sort((a, b) => a! - b!)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    expect(done.filter((d) => d.outcome === 'started')).toHaveLength(12);
    expect(done.filter((d) => d.outcome === 'duplicate')).toHaveLength(3);
    for (const run of runs) expect(await h.runs.events(run.id)).toHaveLength(1);
    expect(done.some((d) => d.attempts > 1)).toBe(true);
  });

  it('processes a delivery once after the worker holding it is killed -9', async (ctx) => {
    if (!available[kind]) ctx.skip();
    t = await create();
    await t.store.migrate();
    const inbox = createInboxStore(t.store);
    const ingress = createGiteaIngress({ inbox, secret: SECRET });
    const ids: number[] = [];
    for (let n = 1; n <= 3; n++) {
      const { body, headers } = opened(n);
      const res = await ingress.request('/webhook/gitea', { method: 'POST', body: new Uint8Array(body), headers: headers() });
      expect(res.status).toBe(202);
      ids.push(((await res.json()) as { id: number }).id);
    }
    const env = { DATABASE_URL: t.url, DB_SCHEMA: t.schema ?? '', LEASE_MS: '1000' };

    // The first worker hangs in the permission lookup: it holds deliveries when it dies.
    const doomed = spawnTs(CHILD, { ...env, NAME: 'doomed', HANG: '1' });
    children.push(doomed);
    await doomed.waitFor((m) => m.checking !== undefined);
    await doomed.kill('SIGKILL');
    expect((await inbox.counts()).processing).toBeGreaterThan(0);
    expect((await t.store.db.selectFrom('runs').select('id').execute()).length).toBe(0);

    // Another worker takes them again once their lease has run out, and processes each once.
    const survivor = spawnTs(CHILD, { ...env, NAME: 'survivor' });
    children.push(survivor);
    const done: Delivery[] = [];
    for (const id of ids) done.push(await processedDelivery(t.store, id));
    expect(done.map((d) => d.outcome)).toEqual(['started', 'started', 'started']);
    const runs = await t.store.db.selectFrom('runs').select(['id', 'number']).orderBy('number').execute();
    expect(runs.map((r) => r.number)).toEqual([1, 2, 3]);
    expect(done.flatMap((d) => d.runIds).sort()).toEqual(runs.map((r) => r.id).sort());
  });
});

describe.each(STORE_KINDS)('two replicas on $kind', ({ kind, create }) => {
  const extra: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    for (const s of extra.splice(0)) await s.close();
  });

  it('process a shared inbox side by side: each delivery once, each issue in order', async (ctx) => {
    if (!available[kind]) ctx.skip();
    t = await create();
    await t.store.migrate();
    const { createStore } = await import('../../src/store/index.js');
    const { createRunEngine } = await import('../../src/runs/index.js');
    const { createInboxProcessing, parseWebhooksConfig } = await import('../../src/ingress/index.js');
    const { parsePipelineConfig } = await import('../../src/pipeline/index.js');
    const { DEFAULTS } = await import('../../src/runs/index.js');
    const { pipeline } = parsePipelineConfig(undefined, { dev: { username: 'claude-dev' }, review: { username: 'claude-review' } });
    // This is about sharing the inbox, not the sender's permission (on by default).
    const { webhooks } = parseWebhooksConfig({ requireWritePermission: false });
    const replicas = [0, 1].map(() => {
      const store = createStore({ url: t!.url, schema: t!.schema });
      extra.push(store);
      const engine = createRunEngine({ store, queue: { ...DEFAULTS.queue } });
      return createInboxProcessing({ store, engine, pipeline, webhooks, logger: { warn: () => {}, error: () => {} }, pollMs: 50 });
    });
    // Label changes on five issues, interleaved: each issue gets ready-for-architecture, then it
    // removed, then ready-for-development. In order, that is architect then develop per issue.
    const inbox = createInboxStore(t.store);
    const steps = [['ready-for-architecture'], [], ['ready-for-development']];
    let change = 0;
    for (const labels of steps) {
      for (let n = 1; n <= 5; n++) {
        const payload = fixtureJson('issues-label_updated.json');
        const issue = payload.issue as Record<string, unknown>;
        issue.number = n;
        payload.number = n;
        issue.labels = labels.map((name, i) => ({
          id: i + 1,
          name,
          color: '0e8a16',
          description: '',
          exclusive: false,
          is_archived: false,
          url: '',
        }));
        issue.updated_at = new Date(Date.UTC(2026, 0, 1) + ++change * 1000).toISOString();
        await inbox.insert({
          source: 'webhook',
          endpoint: '/webhook/gitea',
          deliveryId: `replicas-${change}`,
          event: 'issues',
          eventType: 'issue_label',
          headers: { 'x-gitea-event': 'issues', 'x-gitea-event-type': 'issue_label' },
          body: JSON.stringify(payload, null, 2),
          repository: 'acme/app',
          number: n,
        });
      }
    }
    await Promise.all(replicas.map((r) => r.worker.start()));
    try {
      await until(async () => (await inbox.counts()).processed === 15, 'all 15 deliveries processed');
    } finally {
      await Promise.all(replicas.map((r) => r.worker.stop()));
    }
    const all = (await inbox.list({ limit: 500 })).deliveries.reverse();
    for (let n = 1; n <= 5; n++) {
      const ofIssue = all.filter((d) => d.number === n);
      expect(ofIssue.map((d) => d.stages)).toEqual([['architect'], [], ['develop']]);
      // Processed in the order received.
      const times = ofIssue.map((d) => d.processedAt!);
      expect([...times].sort((a, b) => a - b)).toEqual(times);
    }
    const runs = await t.store.db.selectFrom('runs').select(['stage', 'number']).execute();
    expect(runs).toHaveLength(10);
    // Each delivery had its effect once: a second processing would have coalesced into the run.
    const events = await t.store.db.selectFrom('run_events').select('type').execute();
    expect(events.map((e) => e.type)).toEqual(runs.map(() => 'run:queued'));
  });
});

describe('the permission check as Gitea answers it', () => {
  it('reports a 403 as a configuration problem (verdict and /ready), a 404 as not permitted, and recovers', async () => {
    gitea = await createFakeGitea();
    const dev = gitea.addUser('claude-dev');
    const review = gitea.addUser('claude-review');
    gitea.addUser('alice');
    gitea.addRepo('acme', 'app');
    // A writer-only bot: Gitea answers 403 when it asks about anyone else.
    gitea.addCollaborator('acme', 'app', 'claude-dev', 'write');
    gitea.addCollaborator('acme', 'app', 'alice', 'write');
    t = await STORE_KINDS[0]!.create();
    server = await startTestApp(t, {
      env: { GITEA_URL: gitea.url, GITEA_DEV_TOKEN: dev.token, GITEA_REVIEW_TOKEN: review.token, WEBHOOK_SECRET: SECRET },
      file: 'webhooks:\n  requireWritePermission: true\n  permissionCacheSeconds: 0\n',
    });
    const deliver = async (number: number, sender?: string) => {
      const { body, headers } = opened(number, sender);
      const res = await fetch(`${server!.url}/webhook/gitea`, { method: 'POST', body, headers: headers() });
      expect(res.status).toBe(202);
      return processedDelivery(t!.store, ((await res.json()) as { id: number }).id);
    };
    const ready = async () => {
      const res = await fetch(`${server!.url}/ready`, { headers: bearer() });
      return { status: res.status, body: (await res.json()) as { failing?: string[]; checks: Array<{ name: string; error?: string }> } };
    };

    const refused = await deliver(1);
    expect(refused.outcome).toBe('misconfigured');
    expect(refused.verdict).toMatch(
      /^misconfigured: the forge refused baton's permission lookup on acme\/app \(.*403.*\).*; see docs\/troubleshooting\.md#permission-failures$/,
    );
    expect(refused.attempts).toBe(1);
    const notReady = await ready();
    expect(notReady.status).toBe(503);
    expect(notReady.body.failing).toEqual(['webhook permissions']);
    expect(notReady.body.checks.find((c) => c.name === 'webhook permissions')?.error).toMatch(/403/);
    expect(JSON.stringify(notReady.body)).not.toContain(dev.token);

    // Fixed by the admin: the bot may now read permissions.
    gitea.addCollaborator('acme', 'app', 'claude-dev', 'admin');
    expect(await deliver(2)).toMatchObject({ outcome: 'started', stages: ['analyse'] });
    expect((await ready()).status).toBe(200);
    // A sender Gitea does not know (404): not permitted, not a retry.
    expect(await deliver(3, 'ghost')).toMatchObject({
      outcome: 'not_permitted',
      verdict: 'not permitted: sender ghost is unknown to the forge; see docs/troubleshooting.md#permission-failures',
    });
    expect((await server.app.runs.list()).map((r) => r.number)).toEqual([2]);
  });
});
