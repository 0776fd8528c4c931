import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Run } from '../../src/runs/index.js';
import { createFakeGitea, type FakeGitea } from '../fakes/gitea/index.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { fixtureJson, giteaHeaders, toBody } from '../helpers/gitea-webhook.js';
import { STORE_KINDS, type TestStore } from '../helpers/stores.js';
import { until } from '../helpers/until.js';

const available = Object.fromEntries(await Promise.all(STORE_KINDS.map(async (k) => [k.kind, await k.available()])));
const SECRET = 'catch-up-test-webhook-secret';

/**
 * Catch-up in the whole app, on both stores, with the fake Gitea: what baton missed while it was
 * stopped starts once after it starts again, and the same fact arriving the other way as well (a
 * webhook after catch-up acted, or catch-up after a webhook acted) never starts a second run.
 */
describe.each(STORE_KINDS)('catch-up in the app on $kind', ({ kind, create }) => {
  let t: TestStore;
  let opened = false;
  let gitea: FakeGitea;
  let app: TestApp | undefined;
  /**
   * The fake Gitea's clock, against baton's. What a test sets up before baton first looks
   * happened an hour ago; later changes happen now.
   */
  let skew = 0;

  beforeEach(async (ctx) => {
    if (!available[kind]) ctx.skip();
    t = await create();
    opened = false;
    skew = -3_600_000;
    gitea = await createFakeGitea({ now: () => new Date(Date.now() + skew) });
    gitea.addUser('alice');
    gitea.addRepo('acme', 'app');
    gitea.addCollaborator('acme', 'app', 'alice', 'write');
    for (const login of ['claude-dev', 'claude-review']) {
      gitea.addUser(login, { token: `${login}-token` });
      gitea.addCollaborator('acme', 'app', login, 'write');
    }
    // Senders need write access (checked by default), which the dev bot reads as repository admin.
    gitea.addCollaborator('acme', 'app', 'claude-dev', 'admin');
    gitea.addLabel('acme', 'app', { name: 'ready-for-development' });
    gitea.addLabel('acme', 'app', { name: 'enhancement' });
  });
  afterEach(async () => {
    await app?.close();
    app = undefined;
    await gitea?.close();
    // The app closed the store; cleanup drops the schema or the file.
    await t?.cleanup().catch(() => {});
  });

  const env = (extra: Record<string, string> = {}) => ({
    GITEA_URL: gitea.url,
    GITEA_DEV_TOKEN: 'claude-dev-token',
    GITEA_REVIEW_TOKEN: 'claude-review-token',
    WEBHOOK_SECRET: SECRET,
    CATCHUP_REPOSITORIES: 'acme/app',
    ...extra,
  });

  /** A fresh app over the same database (a restart of baton); its start runs a catch-up pass. */
  async function startBaton(extra: Record<string, string> = {}): Promise<TestApp> {
    const store = (await reopen()).store;
    app = await startTestApp({ ...t, store }, { env: env(extra) });
    return app;
  }
  async function reopen(): Promise<TestStore> {
    // The first start uses the test store itself; later ones open the same database again (the
    // previous app closed its store when it stopped).
    if (!opened) {
      opened = true;
      return t;
    }
    t = await reopenStore(t);
    return t;
  }

  const passes = async (a: TestApp) =>
    (await a.app.store.db.selectFrom('forge_sync_cursors').select('last_pass_at').where('repository', '=', 'acme/app').executeTakeFirst())
      ?.last_pass_at ?? null;
  /** Resolves once a catch-up pass that began after `after` has finished over acme/app. */
  const passAfter = (a: TestApp, after: number) =>
    until(async () => ((await passes(a)) ?? 0) >= after && (await passes(a)), 'a catch-up pass over acme/app');
  const runsOf = async (a: TestApp, stage: string): Promise<Run[]> => (await a.app.runs.list()).filter((r) => r.stage === stage);

  function labelWebhook(number: number, labels: string[]) {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a webhook body, changed field by field
    const body = fixtureJson('issues-label_updated.json') as Record<string, any>;
    body.number = number;
    body.issue = { ...body.issue, number, labels: labels.map((name, id) => ({ id: id + 1, name, color: 'ee0701' })) };
    body.repository = { ...body.repository, name: 'app', full_name: 'acme/app', owner: { ...body.repository.owner, login: 'acme' } };
    body.sender = { ...body.sender, login: 'alice' };
    return toBody(body);
  }
  async function deliver(a: TestApp, body: Buffer, event: string, eventType: string) {
    const response = await fetch(`${a.url}/webhook/gitea`, {
      method: 'POST',
      headers: giteaHeaders(body, { event, eventType, secret: SECRET }),
      body,
    });
    expect(response.status).toBe(202);
    const { id } = (await response.json()) as { id: number };
    return until(async () => {
      const row = await a.app.store.db.selectFrom('inbox_deliveries').selectAll().where('id', '=', id).executeTakeFirst();
      return row?.status === 'processed' ? row : undefined;
    }, `delivery ${id} processed`);
  }

  it('a label added while baton was stopped starts one run after start; the late webhook adds none', async () => {
    const issue = gitea.addIssue('acme', 'app', { title: 'Crash', author: 'alice', labels: ['enhancement'] });
    skew = 0;
    let baton = await startBaton();
    await passAfter(baton, 0);
    await baton.close();

    // Baton is down: Gitea's one delivery of this label change is lost.
    gitea.labelIssue('acme', 'app', issue.number, 'ready-for-development', 'alice');

    const restartedAt = Date.now();
    baton = await startBaton();
    const [run] = await until(async () => {
      const runs = await runsOf(baton, 'develop');
      return runs.length > 0 ? runs : undefined;
    }, 'the develop run catch-up started');
    expect(run).toMatchObject({ owner: 'acme', repo: 'app', number: issue.number });
    await passAfter(baton, restartedAt);

    // Now the webhook arrives after all (an admin's manual redelivery): the same fact, no second run.
    const late = await deliver(baton, labelWebhook(issue.number, ['enhancement', 'ready-for-development']), 'issues', 'issue_label');
    expect(late.outcome).not.toBe('started');
    expect(await runsOf(baton, 'develop')).toHaveLength(1);
  });

  it('a webhook acted first: the catch-up pass after it starts nothing more', async () => {
    const issue = gitea.addIssue('acme', 'app', { title: 'Crash', author: 'alice', labels: ['enhancement'] });
    skew = 0;
    let baton = await startBaton();
    await passAfter(baton, 0);
    gitea.labelIssue('acme', 'app', issue.number, 'ready-for-development', 'alice');
    const delivered = await deliver(baton, labelWebhook(issue.number, ['enhancement', 'ready-for-development']), 'issues', 'issue_label');
    expect(delivered.outcome).toBe('started');
    await baton.close();

    // A restart runs a pass at once, over a window that holds the label change.
    const restartedAt = Date.now();
    baton = await startBaton();
    await passAfter(baton, restartedAt);
    expect(await runsOf(baton, 'develop')).toHaveLength(1);
    const sync = await baton.app.store.db.selectFrom('inbox_deliveries').select('outcome').where('source', '=', 'sync').execute();
    expect(sync.filter((d) => d.outcome === 'started')).toEqual([]);
  });

  it('a push to a pull request while baton was stopped is reviewed once, whichever way it is learnt', async () => {
    const pr = gitea.addPullRequest('acme', 'app', { title: 'Feature', author: 'alice', head: 'feature' });
    skew = 0;
    let baton = await startBaton();
    await passAfter(baton, 0);
    await baton.close();
    const sha = gitea.pushToPullRequest('acme', 'app', pr.number, { by: 'alice' });

    baton = await startBaton();
    await until(async () => (await runsOf(baton, 'review-code')).length === 1, 'the review catch-up started');

    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a webhook body, changed field by field
    const body = fixtureJson('pull_request-opened.json') as Record<string, any>;
    body.action = 'synchronized';
    body.number = pr.number;
    body.pull_request = {
      ...body.pull_request,
      number: pr.number,
      state: 'open',
      merged: false,
      labels: [],
      head: { ...body.pull_request.head, sha },
    };
    body.repository = { ...body.repository, name: 'app', full_name: 'acme/app', owner: { ...body.repository.owner, login: 'acme' } };
    body.sender = { ...body.sender, login: 'alice' };
    const late = await deliver(baton, toBody(body), 'pull_request', 'pull_request_sync');
    expect(late.outcome).not.toBe('started');
    expect(await runsOf(baton, 'review-code')).toHaveLength(1);
  });

  it('catchup.enabled false: no pass, the forge is never listed', async () => {
    const issue = gitea.addIssue('acme', 'app', { title: 'Crash', author: 'alice' });
    skew = 0;
    const baton = await startBaton({ CATCHUP_ENABLED: 'false' });
    gitea.labelIssue('acme', 'app', issue.number, 'ready-for-development', 'alice');
    // The witness that baton is up and talking to the forge: the run's status comment.
    await deliver(baton, labelWebhook(issue.number, ['ready-for-development']), 'issues', 'issue_label');
    await until(() => gitea.comments('acme', 'app', issue.number).length > 0, 'the queued comment');
    expect(gitea.requests.filter((r) => r.path.endsWith('/issues') || r.path.endsWith('/pulls') || r.path.endsWith('/timeline'))).toEqual(
      [],
    );
    expect(await baton.app.store.db.selectFrom('forge_sync_cursors').selectAll().execute()).toEqual([]);
  });
});

async function reopenStore(previous: TestStore): Promise<TestStore> {
  const { createStore } = await import('../../src/store/index.js');
  const store = createStore(previous.schema ? { url: previous.url, schema: previous.schema } : { url: previous.url });
  return { ...previous, store, cleanup: previous.cleanup };
}
