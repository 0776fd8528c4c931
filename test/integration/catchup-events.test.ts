import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Run } from '../../src/runs/index.js';
import { createFakeGitea, type FakeGitea } from '../fakes/gitea/index.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { fixtureJson, giteaHeaders, toBody } from '../helpers/gitea-webhook.js';
import { STORE_KINDS, type TestStore } from '../helpers/stores.js';
import { until } from '../helpers/until.js';

const available = Object.fromEntries(await Promise.all(STORE_KINDS.map(async (k) => [k.kind, await k.available()])));
const SECRET = 'catch-up-events-webhook-secret';

/**
 * Catch-up rebuilds every event a lost webhook could have carried, beside labels and
 * heads: an issue opened, a comment (a ChatOps command included), a review. Each is read from the
 * fake Gitea's API (the endpoints real Gitea serves, test/fakes/gitea/SOURCES.md), sent by its
 * real author, and has one effect whichever way baton learns of it: the late webhook after
 * catch-up, or catch-up after the webhook.
 */
describe.each(STORE_KINDS)('catch-up of openings, comments and reviews on $kind', ({ kind, create }) => {
  let t: TestStore;
  let opened = false;
  let gitea: FakeGitea;
  let app: TestApp | undefined;
  let skew = 0;

  beforeEach(async (ctx) => {
    if (!available[kind]) ctx.skip();
    t = await create();
    opened = false;
    skew = -3_600_000;
    gitea = await createFakeGitea({ now: () => new Date(Date.now() + skew) });
    gitea.addUser('alice');
    gitea.addUser('bob');
    gitea.addRepo('acme', 'app');
    gitea.addCollaborator('acme', 'app', 'alice', 'write');
    gitea.addCollaborator('acme', 'app', 'bob', 'write');
    for (const login of ['claude-dev', 'claude-review']) {
      gitea.addUser(login, { token: `${login}-token` });
      gitea.addCollaborator('acme', 'app', login, 'write');
    }
    gitea.addCollaborator('acme', 'app', 'claude-dev', 'admin');
    gitea.addLabel('acme', 'app', { name: 'ready-for-development' });
    gitea.addLabel('acme', 'app', { name: 'bug' });
  });
  afterEach(async () => {
    await app?.close();
    app = undefined;
    await gitea?.close();
    await t?.cleanup().catch(() => {});
  });

  const env = () => ({
    GITEA_URL: gitea.url,
    GITEA_DEV_TOKEN: 'claude-dev-token',
    GITEA_REVIEW_TOKEN: 'claude-review-token',
    WEBHOOK_SECRET: SECRET,
    CATCHUP_REPOSITORIES: 'acme/app',
  });
  async function startBaton(): Promise<TestApp> {
    if (opened) {
      const { createStore } = await import('../../src/store/index.js');
      t = { ...t, store: createStore(t.schema ? { url: t.url, schema: t.schema } : { url: t.url }) };
    }
    opened = true;
    app = await startTestApp(t, { env: env() });
    return app;
  }
  const passes = async (a: TestApp) =>
    (await a.app.store.db.selectFrom('forge_sync_cursors').select('last_pass_at').where('repository', '=', 'acme/app').executeTakeFirst())
      ?.last_pass_at ?? null;
  const passAfter = (a: TestApp, after: number) =>
    until(async () => ((await passes(a)) ?? 0) >= after && (await passes(a)), 'a catch-up pass over acme/app');
  const runsOf = async (a: TestApp, stage: string): Promise<Run[]> => (await a.app.runs.list()).filter((r) => r.stage === stage);
  const syncVerdicts = async (a: TestApp) =>
    a.app.store.db
      .selectFrom('inbox_deliveries')
      .select(['outcome', 'verdict', 'event_type', 'body'])
      .where('source', '=', 'sync')
      .execute();

  /** Baton up once (its first pass places the repository), then stopped: what happens next is lost. */
  async function startThenStop(): Promise<void> {
    skew = 0;
    const first = await startBaton();
    await passAfter(first, 0);
    await first.close();
    app = undefined;
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- webhook bodies, changed field by field
  type Body = Record<string, any>;
  const repository = (body: Body) => ({
    ...body.repository,
    name: 'app',
    full_name: 'acme/app',
    owner: { ...body.repository.owner, login: 'acme' },
  });
  async function deliver(a: TestApp, body: Body, event: string, eventType: string) {
    const raw = toBody(body);
    const response = await fetch(`${a.url}/webhook/gitea`, {
      method: 'POST',
      headers: giteaHeaders(raw, { event, eventType, secret: SECRET }),
      body: raw,
    });
    expect(response.status).toBe(202);
    const { id } = (await response.json()) as { id: number };
    return until(async () => {
      const row = await a.app.store.db.selectFrom('inbox_deliveries').selectAll().where('id', '=', id).executeTakeFirst();
      return row?.status === 'processed' ? row : undefined;
    }, `delivery ${id} processed`);
  }

  it('an issue opened while baton was stopped starts its analysis once, sent by its author; the late webhook starts nothing', async () => {
    await startThenStop();
    const issue = gitea.addIssue('acme', 'app', { title: 'Autosave', author: 'alice' });

    const baton = await startBaton();
    const [run] = await until(async () => {
      const runs = await runsOf(baton, 'analyse');
      return runs.length > 0 ? runs : undefined;
    }, 'the analysis catch-up started');
    expect(run).toMatchObject({ number: issue.number, payload: expect.objectContaining({ sender: 'alice' }) });

    const body = fixtureJson('issues-opened.json') as Body;
    body.number = issue.number;
    body.issue = { ...body.issue, number: issue.number, state: 'open', labels: [] };
    body.repository = repository(body);
    body.sender = { ...body.sender, login: 'alice' };
    const late = await deliver(baton, body, 'issues', 'issues');
    expect(late).toMatchObject({ outcome: 'duplicate', verdict: expect.stringMatching(/opening of #\d+ already acted on/) });
    expect(await runsOf(baton, 'analyse')).toHaveLength(1);
  });

  it('an issue opened with a label and labelled by someone else: one opening by its author, one label change by the other', async () => {
    await startThenStop();
    const issue = gitea.addIssue('acme', 'app', { title: 'Crash', author: 'alice', labels: ['bug'] });
    gitea.labelIssue('acme', 'app', issue.number, 'ready-for-development', 'bob');

    const baton = await startBaton();
    await until(async () => (await runsOf(baton, 'fix-bug')).length === 1 && (await runsOf(baton, 'develop')).length === 1, 'both runs');
    expect((await runsOf(baton, 'fix-bug'))[0]!.payload).toMatchObject({ sender: 'alice' });
    expect((await runsOf(baton, 'develop'))[0]!.payload).toMatchObject({ sender: 'bob' });
    expect(await runsOf(baton, 'analyse')).toEqual([]);
  });

  it('a comment and a ChatOps command written while baton was stopped: each acted on once, by its author', async () => {
    const issue = gitea.addIssue('acme', 'app', { title: 'Autosave', author: 'alice' });
    await startThenStop();
    const comment = gitea.addComment('acme', 'app', issue.number, { author: 'bob', body: 'It also loses the cursor position.' });
    const command = gitea.addComment('acme', 'app', issue.number, {
      author: 'alice',
      body: '@baton run develop make it save every minute',
    });

    const baton = await startBaton();
    await until(async () => (await runsOf(baton, 'analyse')).length === 1 && (await runsOf(baton, 'develop')).length === 1, 'both runs');
    expect((await runsOf(baton, 'analyse'))[0]!.payload).toMatchObject({ sender: 'bob', commentId: comment.id });
    expect((await runsOf(baton, 'develop'))[0]!.payload).toMatchObject({ sender: 'alice', trigger: 'command by alice' });
    // The command is taken once: its reaction and its reply.
    await until(() => gitea.reactions(command.id).length === 1, 'the taken reaction');
    await until(
      () => gitea.comments('acme', 'app', issue.number).some((c) => c.author === 'claude-dev' && /Started `develop`/.test(c.body)),
      'the reply',
    );

    // The late webhooks of both: no second effect.
    for (const [c, author] of [
      [comment, 'bob'],
      [command, 'alice'],
    ] as const) {
      const body = fixtureJson('issue_comment-created.json') as Body;
      body.issue = { ...body.issue, number: issue.number, state: 'open', labels: [], pull_request: null };
      body.comment = { ...body.comment, id: c.id, body: c.body, user: { ...body.comment.user, login: author } };
      body.repository = repository(body);
      body.sender = { ...body.sender, login: author };
      body.is_pull = false;
      const late = await deliver(baton, body, 'issue_comment', 'issue_comment');
      expect(late.outcome).toBe('duplicate');
    }
    expect(await runsOf(baton, 'analyse')).toHaveLength(1);
    expect(await runsOf(baton, 'develop')).toHaveLength(1);
    expect(gitea.reactions(command.id)).toHaveLength(1);
  });

  it('a comment whose webhook arrived: the catch-up pass after it rebuilds nothing', async () => {
    const issue = gitea.addIssue('acme', 'app', { title: 'Autosave', author: 'alice' });
    skew = 0;
    let baton = await startBaton();
    await passAfter(baton, 0);
    const comment = gitea.addComment('acme', 'app', issue.number, { author: 'bob', body: 'Any news?' });
    const body = fixtureJson('issue_comment-created.json') as Body;
    body.issue = { ...body.issue, number: issue.number, state: 'open', labels: [], pull_request: null };
    body.comment = { ...body.comment, id: comment.id, body: comment.body, user: { ...body.comment.user, login: 'bob' } };
    body.repository = repository(body);
    body.sender = { ...body.sender, login: 'bob' };
    body.is_pull = false;
    expect((await deliver(baton, body, 'issue_comment', 'issue_comment')).outcome).toBe('started');
    await baton.close();

    const restartedAt = Date.now();
    baton = await startBaton();
    await passAfter(baton, restartedAt);
    expect(await runsOf(baton, 'analyse')).toHaveLength(1);
    // Bob's comment is not delivered again (the bots' own status comments are, and ignored: their
    // webhooks never reach this test).
    const rebuilt = (await syncVerdicts(baton)).filter((d) => d.event_type === 'issue_comment');
    expect(rebuilt.filter((d) => (JSON.parse(d.body) as { comment: { id: number } }).comment.id === comment.id)).toEqual([]);
    expect(rebuilt.filter((d) => d.outcome === 'started')).toEqual([]);
  });

  it('a review requesting changes while baton was stopped starts the rework once, sent by the reviewer; a comment review starts nothing', async () => {
    const pr = gitea.addPullRequest('acme', 'app', { title: 'Autosave', author: 'claude-dev', head: 'autosave' });
    await startThenStop();
    gitea.addReview('acme', 'app', pr.number, {
      author: 'bob',
      state: 'REQUEST_CHANGES',
      body: 'Please add a test for the autosave path.',
    });
    gitea.addReview('acme', 'app', pr.number, { author: 'alice', state: 'COMMENT', body: 'Nit: rename the flag.' });
    gitea.addReview('acme', 'app', pr.number, { author: 'alice', state: 'PENDING', body: 'draft' });

    const baton = await startBaton();
    const [run] = await until(async () => {
      const runs = await runsOf(baton, 'rework-pr');
      return runs.length > 0 ? runs : undefined;
    }, 'the rework catch-up started');
    expect(run!.payload).toMatchObject({ sender: 'bob', review: 'rejected' });
    await until(
      async () =>
        (await syncVerdicts(baton)).filter((d) => d.event_type?.startsWith('pull_request_review_') && d.outcome !== null).length === 2,
      'both reviews',
    );
    const comment = (await syncVerdicts(baton)).find((d) => d.event_type === 'pull_request_review_comment');
    expect(comment?.outcome).toBe('ignored');

    const body = fixtureJson('pull_request_review-rejected.json') as Body;
    body.number = pr.number;
    body.pull_request = {
      ...body.pull_request,
      number: pr.number,
      state: 'open',
      merged: false,
      labels: [],
      head: { ...body.pull_request.head, sha: gitea.state.issue(1, pr.number)!.pull!.headSha },
    };
    body.repository = repository(body);
    body.sender = { ...body.sender, login: 'bob' };
    body.review = { type: 'pull_request_review_rejected', content: 'Please add a test for the autosave path.' };
    const late = await deliver(baton, body, 'pull_request_rejected', 'pull_request_review_rejected');
    expect(late.outcome).toBe('duplicate');
    expect(await runsOf(baton, 'rework-pr')).toHaveLength(1);
  });
});
