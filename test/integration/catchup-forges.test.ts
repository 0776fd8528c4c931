import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Env } from '../../src/config-schema/index.js';
import type { Run } from '../../src/runs/index.js';
import { createFakeGitHub, type FakeGitHub } from '../fakes/github/index.js';
import { createFakeGitLab, type FakeGitLab } from '../fakes/gitlab/index.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { githubExample, githubHeaders } from '../helpers/github-webhook.js';
import { GITLAB_EVENT_OF, gitlabExample, gitlabHeaders, type GitLabExample } from '../helpers/gitlab-webhook.js';
import { STORE_KINDS, type TestStore } from '../helpers/stores.js';
import { until } from '../helpers/until.js';

const available = Object.fromEntries(await Promise.all(STORE_KINDS.map(async (k) => [k.kind, await k.available()])));
const SECRET = 'catch-up-forges-webhook-secret';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- webhook bodies, changed field by field
type Body = Record<string, any>;

/** A webhook as its forge would send it: the path, the headers and the raw body. */
interface Webhook {
  path: string;
  headers: Record<string, string>;
  body: string;
}

/**
 * One forge as the tests drive it: its fake (changes made in its web UI, sending no webhook) and
 * the webhooks it would have sent for them, built from its documented example bodies.
 */
interface World {
  forge: 'github' | 'gitlab';
  /** The repository's full path (`acme/app`; on GitLab the namespace may hold subgroups). */
  repository: string;
  env(): Env;
  openIssue(title: string, author: string): number;
  comment(number: number, author: string, body: string, isPull?: boolean): number;
  /** A pull (merge) request by the dev bot; its head sha. */
  openPull(title: string, head: string): { number: number; sha: string };
  approve(number: number, reviewer: string): void;
  /** The reactions (GitLab: award emoji) on a comment, and the comments of an issue. */
  reactions(number: number, commentId: number): string[];
  comments(number: number): { author: string; body: string }[];
  /** A push to the pull (merge) request's branch (no webhook); its new head. */
  push(number: number): string;
  /** GitHub: a review requesting changes; GitLab: an approval taken back (its webhook's `unapproval`, a rejection to baton). */
  reject(number: number, reviewer: string, body: string): void;
  /** GitLab only: a review submitted with "Request changes" by a reviewer (the reviewer state `requested_changes`). */
  requestChanges?(number: number, reviewer: string): void;
  webhooks: {
    /** A change baton acts on by doing nothing (an edit): it makes the repository known to catch-up. */
    edited(number: number, sender: string): Webhook;
    opened(number: number, author: string): Webhook;
    comment(number: number, id: number, author: string, body: string, isPull?: boolean): Webhook;
    review(number: number, reviewer: string, verdict: 'approved' | 'rejected', body: string, sha: string): Webhook;
    /** GitLab only: the merge request `update` whose `changes.reviewers` turns the reviewer to `requested_changes`. */
    requestChanges?(number: number, reviewer: string, sha: string): Webhook;
  };
  close(): Promise<void>;
}

async function gitHubWorld(now: () => Date): Promise<World> {
  const github: FakeGitHub = await createFakeGitHub({ now });
  const dev = github.addUser('claude-dev');
  const review = github.addUser('claude-review');
  github.addRepo('acme', 'app');
  for (const login of ['acme', 'alice', 'bob']) github.addUser(login);
  for (const login of ['alice', 'bob', 'claude-dev', 'claude-review']) github.setPermission('acme', 'app', login, 'write');
  const repository = { id: 1, name: 'app', full_name: 'acme/app', owner: { login: 'acme', id: 2 } };
  const hook = (event: string, body: Body): Webhook => {
    const raw = JSON.stringify(body);
    return { path: '/webhook/github', headers: githubHeaders(raw, { event, secret: SECRET }), body: raw };
  };
  const issueOf = (number: number, author: string, isPull = false) => ({
    ...(githubExample('issues', 'opened').issue as Body),
    number,
    state: 'open',
    labels: [],
    user: { login: author, id: 3 },
    pull_request: isPull ? { url: `https://api.github.com/repos/acme/app/pulls/${number}`, merged_at: null } : undefined,
  });
  return {
    forge: 'github',
    repository: 'acme/app',
    env: () => ({
      GITHUB_URL: github.url,
      GITHUB_DEV_TOKEN: dev.token,
      GITHUB_REVIEW_TOKEN: review.token,
      GITHUB_WEBHOOK_SECRET: SECRET,
    }),
    openIssue: (title, author) => github.addIssue('acme', 'app', { title, author }),
    comment: (number, author, body) => github.addComment('acme', 'app', number, author, body).id,
    openPull(title, head) {
      const number = github.addPullRequest('acme', 'app', { title, author: 'claude-dev', head, base: 'main' });
      return { number, sha: github.issue('acme', 'app', number)!.pull!.sha };
    },
    reactions: (_number, commentId) => github.reactions('acme', 'app', commentId).map((r) => `${r.user}:${r.content}`),
    comments: (number) => github.comments('acme', 'app', number),
    push(number) {
      // What a push does to the pull request GitHub lists: its head and updated_at.
      const pull = github.issue('acme', 'app', number)!;
      pull.pull!.sha = randomBytes(20).toString('hex');
      pull.updatedAt = github.state.timestamp();
      return pull.pull!.sha;
    },
    approve: (number, reviewer) => void github.addReview('acme', 'app', number, reviewer, 'APPROVED'),
    reject: (number, reviewer, body) => void github.addReview('acme', 'app', number, reviewer, 'CHANGES_REQUESTED', body),
    webhooks: {
      edited: (number, sender) =>
        hook('issues', { ...githubExample('issues', 'edited'), repository, issue: issueOf(number, sender), sender: { login: sender } }),
      opened: (number, author) =>
        hook('issues', { ...githubExample('issues', 'opened'), repository, issue: issueOf(number, author), sender: { login: author } }),
      comment(number, id, author, body, isPull) {
        const example = githubExample('issue_comment', 'created') as Body;
        return hook('issue_comment', {
          ...example,
          repository,
          issue: issueOf(number, 'alice', isPull),
          comment: { ...example.comment, id, body, user: { login: author, id: 4 } },
          sender: { login: author },
        });
      },
      review(number, reviewer, verdict, body, sha) {
        const example = githubExample('pull_request_review', 'submitted') as Body;
        return hook('pull_request_review', {
          ...example,
          repository,
          review: { ...example.review, state: verdict === 'approved' ? 'approved' : 'changes_requested', body, commit_id: sha },
          pull_request: {
            ...example.pull_request,
            number,
            state: 'open',
            labels: [],
            head: { ...example.pull_request.head, ref: 'autosave', sha },
          },
          sender: { login: reviewer },
        });
      },
    },
    close: () => github.close(),
  };
}

/** A GitLab world whose project is `<namespace>/app`: top-level (`acme`) or in a subgroup (`acme/platform`). */
const gitLabWorld =
  (namespace: string) =>
  async (now: () => Date): Promise<World> => {
    const gitlab: FakeGitLab = await createFakeGitLab({ now });
    const dev = gitlab.addUser('claude-dev', { bot: true });
    const review = gitlab.addUser('claude-review', { bot: true });
    gitlab.addProject(namespace, 'app');
    for (const username of ['alice', 'bob']) gitlab.addUser(username);
    for (const username of ['alice', 'bob', 'claude-dev', 'claude-review']) gitlab.setAccess(namespace, 'app', username, 30);
    const project = (body: Body) => ({
      ...body.project,
      path_with_namespace: `${namespace}/app`,
      name: 'app',
      namespace: namespace.split('/').at(-1),
    });
    const hook = (name: GitLabExample, body: Body): Webhook => ({
      path: '/webhook/gitlab',
      headers: gitlabHeaders({ event: GITLAB_EVENT_OF[name], token: SECRET }),
      body: JSON.stringify(body),
    });
    const issueHook = (number: number, sender: string, action: string) => {
      const example = gitlabExample('issue') as Body;
      return hook('issue', {
        ...example,
        project: project(example),
        user: { ...example.user, username: sender },
        object_attributes: { ...example.object_attributes, iid: number, action, state: 'opened', labels: [] },
        labels: [],
        changes: {},
      });
    };
    const item = (number: number, isPull?: boolean) => gitlab.item(namespace, 'app', number, isPull ? 'pull' : 'issue')!;
    return {
      forge: 'gitlab',
      repository: `${namespace}/app`,
      env: () => ({
        GITLAB_URL: gitlab.url,
        GITLAB_DEV_TOKEN: dev.token,
        GITLAB_REVIEW_TOKEN: review.token,
        GITLAB_WEBHOOK_SECRET: SECRET,
      }),
      openIssue: (title, author) => gitlab.addIssue(namespace, 'app', { title, author }),
      comment: (number, author, body, isPull) => gitlab.addNote(namespace, 'app', number, author, body, isPull ? 'pull' : 'issue').id,
      openPull(title, head) {
        const number = gitlab.addMergeRequest(namespace, 'app', { title, author: 'claude-dev', source: head, target: 'main' });
        return { number, sha: item(number, true).mr!.sha };
      },
      reactions: (number, noteId) => gitlab.awards(namespace, 'app', number, noteId).map((a) => `${a.user}:${a.name}`),
      comments: (number) => gitlab.notes(namespace, 'app', number),
      push: (number) => gitlab.pushToMergeRequest(namespace, 'app', number),
      approve: (number, reviewer) => gitlab.approve(namespace, 'app', number, reviewer),
      reject: (number, reviewer) => gitlab.unapprove(namespace, 'app', number, reviewer),
      requestChanges(number, reviewer) {
        gitlab.addReviewer(namespace, 'app', number, reviewer);
        gitlab.requestChanges(namespace, 'app', number, reviewer);
      },
      webhooks: {
        edited: (number, sender) => issueHook(number, sender, 'update'),
        opened: (number, author) => issueHook(number, author, 'open'),
        comment(number, id, author, body, isPull) {
          const name = isPull ? 'note-merge-request' : 'note-issue';
          const example = gitlabExample(name) as Body;
          const noteable = isPull ? 'merge_request' : 'issue';
          return hook(name, {
            ...example,
            project: project(example),
            user: { ...example.user, username: author },
            object_attributes: { ...example.object_attributes, id, note: body, action: 'create', system: false },
            [noteable]: { ...example[noteable], iid: number, state: 'opened', labels: [] },
          });
        },
        review(number, reviewer, verdict, _body, sha) {
          const example = gitlabExample('merge-request') as Body;
          return hook('merge-request', {
            ...example,
            project: project(example),
            user: { ...example.user, username: reviewer },
            object_attributes: {
              ...example.object_attributes,
              iid: number,
              action: verdict === 'approved' ? 'approval' : 'unapproval',
              state: 'opened',
              source_branch: 'autosave',
              last_commit: { ...example.object_attributes.last_commit, id: sha },
            },
            labels: [],
            changes: {},
          });
        },
        requestChanges(number, reviewer, sha) {
          // GitLab's docs give no example of this update: changes.reviewers follows the payload captured in client-go MR !2984.
          const example = gitlabExample('merge-request') as Body;
          const entry = (state: string) => [{ id: 7, name: reviewer, username: reviewer, state, re_requested: false }];
          return hook('merge-request', {
            ...example,
            project: project(example),
            user: { ...example.user, username: reviewer },
            object_attributes: {
              ...example.object_attributes,
              iid: number,
              action: 'update',
              state: 'opened',
              source_branch: 'autosave',
              last_commit: { ...example.object_attributes.last_commit, id: sha },
            },
            labels: [],
            changes: { reviewers: { previous: entry('unreviewed'), current: entry('requested_changes') } },
          });
        },
      },
      close: () => gitlab.close(),
    };
  };

/**
 * Catch-up on GitHub and GitLab rebuilds what a lost webhook carried beside labels and heads: an
 * issue opened, a comment (on an issue, on a pull or merge request), a review (GitHub's submitted
 * reviews; GitLab's approvals and approvals taken back). Each is read from the fake forge's API,
 * which answers as the real one does (test/fakes/github/SOURCES.md, test/fakes/gitlab/SOURCES.md),
 * is sent by its real author, and has one effect: the webhook redelivered after catch-up finds
 * it acted on, and catch-up after a webhook that arrived rebuilds nothing. A ChatOps command
 * caught up is taken as its webhook's would be: once (one reaction, one reply, one run).
 */
describe.each(STORE_KINDS)('catch-up of openings, comments and reviews on GitHub and GitLab, $kind', ({ kind, create }) => {
  describe.each([
    // `reviewerStates`: GitLab's "Request changes" is a reviewer state, GitHub's a review (the tests above).
    { name: 'GitHub', world: gitHubWorld, reviewerStates: false },
    { name: 'GitLab', world: gitLabWorld('acme'), reviewerStates: true },
    // Self-managed GitLab is organised in subgroups: the same guarantees for a project two groups deep.
    { name: 'GitLab, a project in a subgroup', world: gitLabWorld('acme/platform'), reviewerStates: true },
  ])('$name', ({ world: makeWorld, reviewerStates }) => {
    let t: TestStore;
    let opened = false;
    let world: World;
    let app: TestApp | undefined;
    let skew = 0;
    /** An issue of before the test's window, whose edit made the repository known. */
    let known = 0;

    beforeEach(async (ctx) => {
      if (!available[kind]) ctx.skip();
      t = await create();
      opened = false;
      // What the fake holds before baton first reads it is an hour old: outside every window.
      skew = -3_600_000;
      world = await makeWorld(() => new Date(Date.now() + skew));
      known = world.openIssue('Known', 'alice');
    });
    afterEach(async () => {
      await app?.close();
      app = undefined;
      await world?.close();
      await t?.cleanup().catch(() => {});
    });

    async function startBaton(): Promise<TestApp> {
      if (opened) {
        const { createStore } = await import('../../src/store/index.js');
        t = { ...t, store: createStore(t.schema ? { url: t.url, schema: t.schema } : { url: t.url }) };
      }
      opened = true;
      app = await startTestApp(t, { env: world.env() });
      return app;
    }
    async function stopBaton(): Promise<void> {
      await app?.close();
      app = undefined;
    }
    const cursor = () => `${world.forge}:${world.repository}`;
    /** The pass over the repository that finished at or after `after` (ms): it read the forge without a failure. */
    async function passAfter(a: TestApp, after: number) {
      const row = await until(async () => {
        const place = await a.app.store.db
          .selectFrom('forge_sync_cursors')
          .selectAll()
          .where('repository', '=', cursor())
          .executeTakeFirst();
        return place && place.last_pass_at !== null && Number(place.last_pass_at) >= after ? place : undefined;
      }, `a catch-up pass over ${cursor()}`);
      expect(row.last_error).toBeNull();
    }
    const runsOf = async (a: TestApp, stage: string): Promise<Run[]> => (await a.app.runs.list()).filter((r) => r.stage === stage);
    /** Catch-up's deliveries, those received at or after `since` (ms) when given. */
    const synced = async (a: TestApp, since = 0) =>
      a.app.store.db
        .selectFrom('inbox_deliveries')
        .select(['outcome', 'verdict', 'event_type', 'body', 'endpoint'])
        .where('source', '=', 'sync')
        .where('received_at', '>=', since)
        .execute();

    async function deliver(a: TestApp, hook: Webhook) {
      const response = await fetch(`${a.url}${hook.path}`, { method: 'POST', headers: hook.headers, body: hook.body });
      expect(response.status, await response.clone().text()).toBe(202);
      const { id } = (await response.json()) as { id: number };
      return until(async () => {
        const row = await a.app.store.db.selectFrom('inbox_deliveries').selectAll().where('id', '=', id).executeTakeFirst();
        return row?.status === 'processed' ? row : undefined;
      }, `delivery ${id} processed`);
    }

    /**
     * GitHub's and GitLab's catch-up reads the repositories their webhooks named: one webhook makes
     * acme/app known, the next start's pass places it at "now", and baton stops. What happens on
     * the forge from here on, its webhooks lost, is for the next start's pass to find.
     */
    async function knownThenStopped(): Promise<void> {
      const first = await startBaton();
      expect((await deliver(first, world.webhooks.edited(known, 'alice'))).outcome).not.toBe('invalid');
      await stopBaton();
      skew = 0;
      const startedAt = Date.now();
      const second = await startBaton();
      await passAfter(second, startedAt);
      await stopBaton();
    }

    it('an issue opened while baton was stopped starts its analysis once, sent by its author; the redelivered webhook starts nothing', async () => {
      await knownThenStopped();
      const number = world.openIssue('Autosave', 'alice');

      const baton = await startBaton();
      const [run] = await until(async () => {
        const runs = await runsOf(baton, 'analyse');
        return runs.length > 0 ? runs : undefined;
      }, 'the analysis catch-up started');
      expect(run).toMatchObject({ number, forge: world.forge, payload: expect.objectContaining({ sender: 'alice' }) });
      expect((await synced(baton)).find((d) => d.outcome === 'started')).toMatchObject({ endpoint: `sync:${world.forge}` });

      const late = await deliver(baton, world.webhooks.opened(number, 'alice'));
      expect(late).toMatchObject({ outcome: 'duplicate', verdict: expect.stringMatching(/opening of #\d+ already acted on/) });
      expect(await runsOf(baton, 'analyse')).toHaveLength(1);
    });

    it('comments written while baton was stopped, a ChatOps command among them: each reaches the inbox once, by its author', async () => {
      const pull = world.openPull('Autosave', 'autosave');
      await knownThenStopped();
      const comment = world.comment(known, 'bob', 'It also loses the cursor position.');
      const command = world.comment(known, 'alice', '@baton run develop make it save every minute');
      const onPull = world.comment(pull.number, 'bob', 'Looks close; one question below.', true);

      const baton = await startBaton();
      const run = await until(
        async () => (await runsOf(baton, 'analyse')).find((r) => r.payload.commentId === comment),
        "the analysis bob's comment started",
      );
      expect(run).toMatchObject({ number: known, payload: expect.objectContaining({ sender: 'bob' }) });
      const comments = async () =>
        (await synced(baton))
          .map((d) => ({
            ...d,
            comment: (JSON.parse(d.body) as { comment?: { id: number; body: string; user: { login: string } } }).comment,
          }))
          .filter((d) => d.comment && [comment, command, onPull].includes(d.comment.id));
      // The command is a comment like any other to catch-up: it reaches the inbox as its webhook
      // would have, by its author and with its words, to be taken as the webhook's would be.
      await until(async () => (await comments()).filter((d) => d.outcome !== null).length === 3, 'the three comments processed');
      const byId = new Map((await comments()).map((d) => [d.comment!.id, d]));
      expect(byId.get(command)).toMatchObject({
        event_type: 'issue_comment',
        comment: { user: { login: 'alice' }, body: '@baton run develop make it save every minute' },
      });
      expect(byId.get(onPull)).toMatchObject({ event_type: 'pull_request_comment', comment: { user: { login: 'bob' } } });

      // The webhooks redelivered after catch-up: no second effect.
      const runs = (await baton.app.runs.list()).map((r) => r.id);
      for (const [id, author, body, isPull] of [
        [comment, 'bob', 'It also loses the cursor position.', false],
        [command, 'alice', '@baton run develop make it save every minute', false],
        [onPull, 'bob', 'Looks close; one question below.', true],
      ] as const) {
        const late = await deliver(baton, world.webhooks.comment(isPull ? pull.number : known, id, author, body, isPull));
        expect(late).toMatchObject({ outcome: 'duplicate', verdict: `duplicate: comment ${id} already acted on` });
      }
      expect((await baton.app.runs.list()).map((r) => r.id)).toEqual(runs);
    });

    it('a ChatOps command written while baton was stopped is taken once, by its author: one reaction, one reply, one run', async () => {
      await knownThenStopped();
      const body = '@baton run develop make it save every minute';
      const command = world.comment(known, 'alice', body);

      const baton = await startBaton();
      const [run] = await until(async () => {
        const runs = await runsOf(baton, 'develop');
        return runs.length > 0 ? runs : undefined;
      }, "the command's run");
      expect(run).toMatchObject({ number: known, payload: expect.objectContaining({ sender: 'alice', trigger: 'command by alice' }) });
      await until(() => world.reactions(known, command).length === 1, 'the taken reaction');
      expect(world.reactions(known, command)[0]).toMatch(/^claude-dev:/);
      await until(() => world.comments(known).some((c) => c.author === 'claude-dev' && /Started `develop`/.test(c.body)), 'the reply');

      const late = await deliver(baton, world.webhooks.comment(known, command, 'alice', body));
      expect(late).toMatchObject({ outcome: 'duplicate', verdict: `duplicate: comment ${command} already acted on` });
      expect(await runsOf(baton, 'develop')).toHaveLength(1);
      expect(world.reactions(known, command)).toHaveLength(1);
      expect(world.comments(known).filter((c) => c.author === 'claude-dev' && /Started `develop`/.test(c.body))).toHaveLength(1);
    });

    it('a rejecting and an approving review given while baton was stopped: rework and test once each, sent by the reviewers', async () => {
      const pull = world.openPull('Autosave', 'autosave');
      // GitLab takes back only an approval that was given: bob's, of before the window.
      if (world.forge === 'gitlab') world.approve(pull.number, 'bob');
      await knownThenStopped();
      world.reject(pull.number, 'bob', 'Please add a test for the autosave path.');
      world.approve(pull.number, 'alice');

      const baton = await startBaton();
      await until(async () => (await runsOf(baton, 'rework-pr')).length === 1 && (await runsOf(baton, 'test')).length === 1, 'both runs');
      expect((await runsOf(baton, 'rework-pr'))[0]).toMatchObject({
        number: pull.number,
        payload: expect.objectContaining({ sender: 'bob', review: 'rejected' }),
      });
      expect((await runsOf(baton, 'test'))[0]).toMatchObject({
        number: pull.number,
        payload: expect.objectContaining({ sender: 'alice', review: 'approved' }),
      });
      // Bob's approval of before the window is not rebuilt.
      expect((await synced(baton)).filter((d) => d.event_type?.startsWith('pull_request_review_'))).toHaveLength(2);

      for (const [reviewer, verdict, body] of [
        ['bob', 'rejected', 'Please add a test for the autosave path.'],
        ['alice', 'approved', ''],
      ] as const) {
        const late = await deliver(baton, world.webhooks.review(pull.number, reviewer, verdict, body, pull.sha));
        expect(late).toMatchObject({
          outcome: 'duplicate',
          verdict: `duplicate: the review of #${pull.number} by ${reviewer} already acted on`,
        });
      }
      expect(await runsOf(baton, 'rework-pr')).toHaveLength(1);
      expect(await runsOf(baton, 'test')).toHaveLength(1);
    });

    if (reviewerStates)
      it('a first "Request changes" given while baton was stopped (GitLab): rework once, sent by the reviewer; its late webhook a duplicate', async () => {
        const pull = world.openPull('Autosave', 'autosave');
        await knownThenStopped();
        // No approval to take back: only the reviewer state says so (and GitLab's system note of it).
        world.requestChanges!(pull.number, 'bob');

        const baton = await startBaton();
        const [run] = await until(async () => {
          const runs = await runsOf(baton, 'rework-pr');
          return runs.length > 0 ? runs : undefined;
        }, 'rework-pr from catch-up');
        expect(run).toMatchObject({ number: pull.number, payload: expect.objectContaining({ sender: 'bob', review: 'rejected' }) });
        const late = await deliver(baton, world.webhooks.requestChanges!(pull.number, 'bob', pull.sha));
        expect(late).toMatchObject({ outcome: 'duplicate', verdict: `duplicate: the review of #${pull.number} by bob already acted on` });
        expect(await runsOf(baton, 'rework-pr')).toHaveLength(1);
      });

    if (reviewerStates)
      it('a "Request changes" whose webhook arrived (GitLab): the catch-up pass after it rebuilds none', async () => {
        const pull = world.openPull('Autosave', 'autosave');
        await knownThenStopped();
        const startedAt = Date.now();
        let baton = await startBaton();
        await passAfter(baton, startedAt);
        world.requestChanges!(pull.number, 'bob');
        expect((await deliver(baton, world.webhooks.requestChanges!(pull.number, 'bob', pull.sha))).outcome).toBe('started');
        await stopBaton();

        const restartedAt = Date.now();
        baton = await startBaton();
        await passAfter(baton, restartedAt);
        expect(await runsOf(baton, 'rework-pr')).toHaveLength(1);
        expect((await synced(baton, restartedAt)).filter((d) => d.event_type?.startsWith('pull_request_review_'))).toEqual([]);
      });

    it('an opening, a comment and a review whose webhooks arrived, then a push: the catch-up pass after them rebuilds none', async () => {
      const pull = world.openPull('Autosave', 'autosave');
      if (world.forge === 'gitlab') world.approve(pull.number, 'bob');
      await knownThenStopped();
      // This start's own pass done before anything happens: else it may read the comment before
      // its webhook arrives (and its copy is then the duplicate).
      const startedAt = Date.now();
      let baton = await startBaton();
      await passAfter(baton, startedAt);
      const issue = world.openIssue('Autosave', 'alice');
      expect((await deliver(baton, world.webhooks.opened(issue, 'alice'))).outcome).toBe('started');
      const comment = world.comment(known, 'bob', 'Any news?');
      expect((await deliver(baton, world.webhooks.comment(known, comment, 'bob', 'Any news?'))).outcome).toBe('started');
      world.reject(pull.number, 'bob', 'Please add a test.');
      expect((await deliver(baton, world.webhooks.review(pull.number, 'bob', 'rejected', 'Please add a test.', pull.sha))).outcome).toBe(
        'started',
      );
      // The review was of the head before this push, as its webhook said: still one fact.
      world.push(pull.number);
      await stopBaton();

      const restartedAt = Date.now();
      baton = await startBaton();
      await passAfter(baton, restartedAt);
      expect(await runsOf(baton, 'analyse')).toHaveLength(2);
      expect(await runsOf(baton, 'rework-pr')).toHaveLength(1);
      // Nothing started twice, whenever a pass read it; and the pass after the restart delivers
      // nothing of theirs again (the bots' own status comments, yes, ignored: their webhooks
      // never reach this test). A pass of the first server may have read the comment before its
      // webhook was processed: that copy found the fact and was a duplicate.
      expect((await synced(baton)).filter((d) => d.outcome === 'started')).toEqual([]);
      const rebuilt = await synced(baton, restartedAt);
      expect(rebuilt.filter((d) => d.event_type?.startsWith('pull_request_review_') || d.event_type === 'issues')).toEqual([]);
      const ids = rebuilt.map((d) => (JSON.parse(d.body) as { comment?: { id: number } }).comment?.id);
      expect(ids).not.toContain(comment);
    });
  });
});
