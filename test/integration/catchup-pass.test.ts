import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createCatchupPass, createCatchupWorker, createSyncStore, type CatchupPass } from '../../src/catchup/index.js';
import { createGiteaClient } from '../../src/forge/index.js';
import { createInboxStore, type Delivery, type InboxStore } from '../../src/ingress/index.js';
import { createFakeGitea, type FakeGitea } from '../fakes/gitea/index.js';
import { STORE_KINDS, type TestStore } from '../helpers/stores.js';
import { until } from '../helpers/until.js';

const available = Object.fromEntries(await Promise.all(STORE_KINDS.map(async (k) => [k.kind, await k.available()])));

/**
 * One catch-up pass against the fake Gitea, on both stores: what it reads and what it puts in the
 * inbox (the inbox worker's processing of it is tested with the whole app, in catchup-app).
 */
describe.each(STORE_KINDS)('catch-up pass on $kind', ({ kind, create }) => {
  let t: TestStore;
  let gitea: FakeGitea;
  let inbox: InboxStore;
  let pass: CatchupPass;
  let clock = 0;
  const tick = (seconds = 1) => (clock += seconds * 1000);

  beforeEach(async (ctx) => {
    if (!available[kind]) ctx.skip();
    clock = Date.parse('2026-03-01T10:00:00Z');
    t = await create();
    await t.store.migrate();
    gitea = await createFakeGitea({ now: () => new Date(clock) });
    const bot = gitea.addUser('claude-dev');
    gitea.addUser('alice');
    gitea.addRepo('Acme', 'App');
    gitea.addCollaborator('Acme', 'App', 'alice', 'write');
    gitea.addCollaborator('Acme', 'App', 'claude-dev', 'write');
    gitea.addLabel('Acme', 'App', { name: 'ready-for-development' });
    gitea.addLabel('Acme', 'App', { name: 'bug' });
    inbox = createInboxStore(t.store, () => clock);
    pass = createCatchupPass({
      store: t.store,
      inbox,
      sync: createSyncStore(t.store, () => clock),
      client: createGiteaClient({ baseUrl: gitea.url, token: bot.token }),
      repositories: [{ owner: 'acme', repo: 'app' }],
      now: () => clock,
    });
  });
  afterEach(async () => {
    await gitea?.close();
    await t?.cleanup();
  });

  const syncRows = async (): Promise<Delivery[]> => (await inbox.list({ source: 'sync', limit: 500 })).deliveries.reverse();
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a webhook body, read field by field
  const body = (d: Delivery) => JSON.parse(d.body) as Record<string, any>;

  it('puts a label added since the last pass into the inbox, as the webhook would have said it', async () => {
    const issue = gitea.addIssue('Acme', 'App', { title: 'Crash', author: 'alice' });
    tick(120);
    expect(await pass.run()).toEqual([expect.objectContaining({ repository: 'acme/app', queued: 0 })]);

    tick(60);
    gitea.labelIssue('Acme', 'App', issue.number, 'ready-for-development', 'alice');
    tick(5);
    const [result] = await pass.run();
    expect(result).toMatchObject({ queued: 1, skipped: [] });
    const [row] = await syncRows();
    expect(row).toMatchObject({
      source: 'sync',
      endpoint: 'sync',
      event: 'issues',
      eventType: 'issue_label',
      repository: 'acme/app',
      number: 1,
    });
    expect(body(row!)).toMatchObject({
      action: 'label_updated',
      repository: { owner: { login: 'Acme' }, name: 'App' },
      sender: { login: 'alice' },
      issue: { number: 1, state: 'open', labels: [{ name: 'ready-for-development' }] },
    });
    expect(body(row!).repository.clone_url).toBeUndefined();

    // The next pass finds the same fact in the inbox already and stores nothing more.
    tick(60);
    expect((await pass.run())[0]).toMatchObject({ queued: 0 });
    expect(await syncRows()).toHaveLength(1);
  });

  it('reads every page: 70 issues labelled while baton was away are 70 events', async () => {
    const issues = Array.from({ length: 70 }, (_, i) => gitea.addIssue('Acme', 'App', { title: `issue ${i}`, author: 'alice' }));
    tick(120);
    await pass.run();
    tick(60);
    for (const issue of issues) gitea.labelIssue('Acme', 'App', issue.number, 'bug', 'alice');
    tick(5);
    expect((await pass.run())[0]).toMatchObject({ read: 70, queued: 70 });
    expect(new Set((await syncRows()).map((d) => d.number))).toEqual(new Set(issues.map((i) => i.number)));
    expect(gitea.requests.filter((r) => r.path === '/api/v1/repos/Acme/App/issues').length).toBeGreaterThanOrEqual(2);
  });

  it('the forge down during a pass: the repository keeps its place and the next pass finds everything', async () => {
    const issue = gitea.addIssue('Acme', 'App', { title: 'Crash', author: 'alice' });
    tick(120);
    await pass.run();
    tick(60);
    gitea.labelIssue('Acme', 'App', issue.number, 'ready-for-development', 'alice');
    const [cursorBefore] = await createSyncStore(t.store).list();

    gitea.failNext(1, { path: '/issues', status: 502 });
    const [failed] = await pass.run();
    expect(failed).toMatchObject({ error: expect.stringMatching(/502/), retryable: true, queued: 0 });
    const [cursorAfter] = await createSyncStore(t.store).list();
    expect(cursorAfter).toMatchObject({ since: cursorBefore!.since, lastError: expect.stringMatching(/502/) });
    expect(await syncRows()).toHaveLength(0);

    // Later, long after: the window still starts where the last good pass ended.
    tick(3600);
    expect((await pass.run())[0]).toMatchObject({ queued: 1 });
    const [cursorNow] = await createSyncStore(t.store).list();
    expect(cursorNow).toMatchObject({ lastError: null, since: gitea.state.issue(1, issue.number)!.updatedAt });
  });

  it('a push to a pull request while baton was away is a synchronized event by the pusher', async () => {
    const pr = gitea.addPullRequest('Acme', 'App', { title: 'Feature', author: 'alice' });
    tick(120);
    await pass.run();
    tick(60);
    const sha = gitea.pushToPullRequest('Acme', 'App', pr.number, { by: 'alice' });
    tick(5);
    expect((await pass.run())[0]).toMatchObject({ queued: 1 });
    const [row] = await syncRows();
    expect(row).toMatchObject({ event: 'pull_request', eventType: 'pull_request_sync' });
    expect(body(row!)).toMatchObject({ action: 'synchronized', sender: { login: 'alice' }, pull_request: { head: { sha } } });
  });

  it('repositories seen in webhook deliveries are read too, and one the bot cannot see reports, not throws', async () => {
    await inbox.insert({
      source: 'webhook',
      endpoint: '/webhook/gitea',
      deliveryId: 'd-1',
      event: 'issues',
      eventType: 'issues',
      headers: {},
      body: '{}',
      repository: 'ghost/hidden',
      number: 1,
    });
    const results = await pass.run();
    expect(results.map((r) => r.repository)).toEqual(['acme/app', 'ghost/hidden']);
    expect(results[1]).toMatchObject({ error: expect.stringMatching(/404/), retryable: false });
  });
});

describe('catch-up worker', () => {
  it('a pass the forge failed is retried sooner than the interval, and then finds everything', async () => {
    const t = await STORE_KINDS[0]!.create();
    await t.store.migrate();
    const gitea = await createFakeGitea();
    try {
      const bot = gitea.addUser('claude-dev');
      gitea.addUser('alice');
      gitea.addRepo('acme', 'app');
      gitea.addLabel('acme', 'app', { name: 'bug' });
      const issue = gitea.addIssue('acme', 'app', { title: 'Crash', author: 'alice' });
      const inbox = createInboxStore(t.store);
      const sync = createSyncStore(t.store);
      const pass = createCatchupPass({
        store: t.store,
        inbox,
        sync,
        client: createGiteaClient({ baseUrl: gitea.url, token: bot.token }),
        repositories: [{ owner: 'acme', repo: 'app' }],
      });
      // Enrolled a minute ago: the label below is inside the first window.
      await sync.add([{ owner: 'acme', repo: 'app' }], 'config', new Date(Date.now() - 60_000).toISOString());
      gitea.labelIssue('acme', 'app', issue.number, 'bug', 'alice');
      gitea.failNext(3, { path: '/issues', status: 503 });
      const worker = createCatchupWorker({
        pass,
        logger: { info() {}, warn() {}, error() {} },
        // An hour between passes: only the retry can bring the event in while the test waits.
        intervalMs: 3_600_000,
        retry: { baseMs: 20, maxMs: 100 },
      });
      worker.start();
      try {
        // The pass writes the delivery before it reports: wait for both, or a loaded
        // machine reads the previous (failed) pass's results.
        await until(
          async () => (await inbox.list({ source: 'sync' })).deliveries.length === 1 && worker.lastResults[0]?.queued === 1,
          'the sync delivery and the pass that reports it after the forge came back',
        );
        expect(gitea.requests.filter((r) => r.path === '/api/v1/repos/acme/app/issues' && r.status === 503)).toHaveLength(3);
        expect(worker.lastResults).toEqual([expect.objectContaining({ queued: 1 })]);
      } finally {
        await worker.stop();
      }
    } finally {
      await gitea.close();
      await t.cleanup();
    }
  });
});
