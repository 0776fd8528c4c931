import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createGiteaClient, createGitHubClient, createGitLabClient, type ForgeClient } from '../../src/forge/index.js';
import { createFakeGitea, type FakeGitea } from '../fakes/gitea/index.js';
import { createFakeGitHub, type FakeGitHub } from '../fakes/github/index.js';
import { createFakeGitLab } from '../fakes/gitlab/index.js';

/**
 * The forge calls catch-up reads (issues and pull requests updated since a time, an issue's
 * timeline), against the fake Gitea answering as reference/gitea/API.md says: `since` inclusive
 * on updated_at, newest created first, pages of at most 50, the timeline's X-Total-Count being the
 * page's length.
 */
describe('Gitea client: lists for catch-up', () => {
  let gitea: FakeGitea;
  let client: ForgeClient;
  let clock = Date.parse('2026-03-01T10:00:00Z');

  async function start() {
    clock = Date.parse('2026-03-01T10:00:00Z');
    gitea = await createFakeGitea({ now: () => new Date(clock) });
    const bot = gitea.addUser('claude-dev');
    gitea.addUser('alice');
    gitea.addRepo('acme', 'app');
    gitea.addCollaborator('acme', 'app', 'alice', 'write');
    gitea.addLabel('acme', 'app', { name: 'ready-for-development' });
    client = createGiteaClient({ baseUrl: gitea.url, token: bot.token });
  }
  const tick = (seconds = 1) => (clock += seconds * 1000);

  afterEach(async () => {
    await gitea.close();
  });

  it('reads every page of issues updated since a time, and only issues', async () => {
    await start();
    const old = gitea.addIssue('acme', 'app', { title: 'old', author: 'alice' });
    tick(60);
    const since = new Date(clock).toISOString();
    // 120 issues: three pages of 50 (the most Gitea sends), the newest created first.
    for (let i = 0; i < 120; i++) {
      gitea.addIssue('acme', 'app', { title: `new ${i}`, author: 'alice', state: i % 7 === 0 ? 'closed' : 'open' });
      tick();
    }
    gitea.addPullRequest('acme', 'app', { title: 'a pull request', author: 'alice' });
    tick(60);
    // Touching the old issue brings it into the window.
    gitea.labelIssue('acme', 'app', old.number, 'ready-for-development', 'alice');

    const issues = await client.listIssuesUpdatedSince('acme', 'app', since);
    expect(issues).toHaveLength(121);
    expect(issues.some((i) => i.isPullRequest)).toBe(false);
    expect(issues.filter((i) => i.state === 'closed')).toHaveLength(18);
    expect(issues.find((i) => i.number === old.number)?.labels.map((l) => l.name)).toEqual(['ready-for-development']);
    const pages = gitea.requests.filter((r) => r.path === '/api/v1/repos/acme/app/issues');
    expect(pages).toHaveLength(3);
  });

  it('`since` is inclusive to the second and refused when not RFC 3339', async () => {
    await start();
    const issue = gitea.addIssue('acme', 'app', { title: 'edge', author: 'alice' });
    expect(await client.listIssuesUpdatedSince('acme', 'app', issue.updatedAt)).toHaveLength(1);
    expect(await client.listIssuesUpdatedSince('acme', 'app', new Date(clock + 1000).toISOString())).toHaveLength(0);
    await expect(client.listIssuesUpdatedSince('acme', 'app', 'yesterday')).rejects.toMatchObject({ status: 422, retryable: false });
  });

  it('reads pull requests most recently updated first and stops at the first older than `since`', async () => {
    await start();
    for (let i = 0; i < 70; i++) {
      gitea.addPullRequest('acme', 'app', { title: `old ${i}`, author: 'alice' });
      tick();
    }
    tick(60);
    const since = new Date(clock).toISOString();
    const fresh = [];
    for (let i = 0; i < 55; i++) {
      fresh.push(gitea.addPullRequest('acme', 'app', { title: `fresh ${i}`, author: 'alice' }));
      tick();
    }
    const sha = gitea.pushToPullRequest('acme', 'app', 3, { by: 'alice' });

    const pulls = await client.listPullRequestsUpdatedSince('acme', 'app', since);
    expect(pulls.map((p) => p.number).sort((a, b) => a - b)).toEqual([3, ...fresh.map((p) => p.number)]);
    expect(pulls.find((p) => p.number === 3)?.head.sha).toBe(sha);
    // 56 recent ones: the second page holds the first older one, so there is no third request.
    expect(gitea.requests.filter((r) => r.path === '/api/v1/repos/acme/app/pulls')).toHaveLength(2);
  });

  it("reads a timeline across pages although its X-Total-Count is only the page's length", async () => {
    await start();
    gitea.addLabel('acme', 'app', { name: 'bug' });
    const issue = gitea.addIssue('acme', 'app', { title: 'busy', author: 'alice' });
    tick(60);
    const since = new Date(clock).toISOString();
    for (let i = 0; i < 30; i++) {
      gitea.labelIssue('acme', 'app', issue.number, 'bug', 'alice');
      gitea.unlabelIssue('acme', 'app', issue.number, 'bug', 'claude-dev');
      tick();
    }
    gitea.labelIssue('acme', 'app', issue.number, 'ready-for-development', 'alice');
    gitea.addComment('acme', 'app', issue.number, { author: 'alice', body: 'go' });

    const timeline = await client.listTimeline('acme', 'app', issue.number, since);
    expect(timeline).toHaveLength(62);
    expect(timeline.at(-2)).toMatchObject({ kind: 'label_added', label: 'ready-for-development', user: 'alice' });
    expect(timeline.at(-1)).toMatchObject({ kind: 'other', type: 'comment', user: 'alice' });
    expect(timeline.filter((e) => e.kind === 'label_removed').every((e) => e.user === 'claude-dev')).toBe(true);
    // 62 entries: pages of 50 and 12, then the empty page that ends the walk.
    expect(gitea.requests.filter((r) => r.path.endsWith(`/issues/${issue.number}/timeline`))).toHaveLength(3);
  });

  it('a pull request push is a `pull_push` entry by the pusher', async () => {
    await start();
    const pr = gitea.addPullRequest('acme', 'app', { title: 'feature', author: 'alice' });
    tick();
    gitea.pushToPullRequest('acme', 'app', pr.number, { by: 'claude-dev' });
    const timeline = await client.listTimeline('acme', 'app', pr.number, pr.createdAt);
    expect(timeline).toEqual([expect.objectContaining({ kind: 'pull_push', type: 'pull_push', user: 'claude-dev' })]);
  });
});

/**
 * GitHub's list of a repository's comments (docs.github.com, "List issue comments for a
 * repository"): every issue's and pull request's, `since` on updated_at, sorted by creation.
 */
describe('GitHub client: comments for catch-up', () => {
  let github: FakeGitHub;
  let client: ForgeClient;
  let clock = Date.parse('2026-03-01T10:00:00Z');
  const tick = (seconds = 1) => (clock += seconds * 1000);

  beforeEach(async () => {
    clock = Date.parse('2026-03-01T10:00:00Z');
    github = await createFakeGitHub({ now: () => new Date(clock) });
    const bot = github.addUser('claude-dev');
    for (const login of ['acme', 'alice']) github.addUser(login);
    github.addRepo('acme', 'app');
    github.setPermission('acme', 'app', 'claude-dev', 'write');
    client = createGitHubClient({ apiUrl: github.apiUrl, token: bot.token });
  });
  afterEach(async () => {
    await github.close();
  });

  it('reads every page of comments updated since a time, oldest created first, each with its issue or pull request', async () => {
    const issue = github.addIssue('acme', 'app', { title: 'an issue', author: 'alice' });
    const pull = github.addPullRequest('acme', 'app', { title: 'a pull request', author: 'alice', head: 'feature', base: 'main' });
    const old = await client.createComment('acme', 'app', issue, 'written before');
    github.addComment('acme', 'app', issue, 'alice', 'also before');
    tick(60);
    const since = new Date(clock).toISOString().replace(/\.\d{3}Z$/, 'Z');
    const fresh: number[] = [];
    // 150 comments: two pages of at most 100.
    for (let i = 0; i < 150; i++) {
      fresh.push(github.addComment('acme', 'app', i % 2 ? pull : issue, 'alice', `comment ${i}`).id);
      if (i % 10 === 0) tick();
    }
    // An old comment edited inside the window is in it (`since` reads updated_at).
    await client.editComment('acme', 'app', old.id, 'written before, edited now');

    const comments = await client.listCommentsUpdatedSince!('acme', 'app', since);
    expect(comments.map((c) => c.id)).toEqual([old.id, ...fresh]);
    expect(comments[0]).toMatchObject({ number: issue, body: 'written before, edited now', user: { login: 'claude-dev' } });
    expect(comments[2]).toMatchObject({ number: pull, body: 'comment 1', user: { login: 'alice' } });
    expect(github.requests.filter((r) => r === 'GET /api/v3/repos/acme/app/issues/comments')).toHaveLength(2);
  });
});

/**
 * GitLab's approvals have no time (`GET …/approvals`), and one taken back leaves nothing there:
 * catch-up reads them from the system notes GitLab writes for both (SOURCES.md).
 */
describe('GitLab client: review events for catch-up', () => {
  it('reads approvals, approvals taken back and requests for changes from the system notes, by whoever clicked, oldest first', async () => {
    let clock = Date.parse('2026-03-01T10:00:00Z');
    const gitlab = await createFakeGitLab({ now: () => new Date(clock) });
    try {
      const bot = gitlab.addUser('claude-dev', { bot: true });
      for (const name of ['alice', 'bob']) gitlab.addUser(name);
      gitlab.addProject('acme', 'app');
      gitlab.setAccess('acme', 'app', 'claude-dev', 30);
      const mr = gitlab.addMergeRequest('acme', 'app', { title: 'feature', author: 'alice', source: 'feature', target: 'main' });
      const first = gitlab.item('acme', 'app', mr, 'pull')!.mr!.sha;
      gitlab.approve('acme', 'app', mr, 'bob');
      clock += 1000;
      gitlab.addNote('acme', 'app', mr, 'alice', 'approved this merge request', 'pull');
      gitlab.unapprove('acme', 'app', mr, 'bob');
      clock += 500;
      const second = gitlab.pushToMergeRequest('acme', 'app', mr);
      clock += 500;
      gitlab.approve('acme', 'app', mr, 'alice');
      clock += 500;
      gitlab.addReviewer('acme', 'app', mr, 'bob');
      gitlab.requestChanges('acme', 'app', mr, 'bob');
      const client = createGitLabClient({ rootUrl: gitlab.url, token: bot.token });

      const events = await client.listReviewEvents!('acme', 'app', mr);
      // Alice's note saying the same words is a comment, not an approval: only system notes count.
      // Each on the head of the newest diff version made before it (the push came after bob took his back).
      expect(events.map((e) => [e.user?.login, e.state, e.submittedAt, e.commitId])).toEqual([
        ['bob', 'APPROVED', '2026-03-01T10:00:00.000Z', first],
        ['bob', 'REQUEST_CHANGES', '2026-03-01T10:00:01.000Z', first],
        ['alice', 'APPROVED', '2026-03-01T10:00:02.000Z', second],
        // "Request changes": GitLab's system note `requested changes` by the reviewer.
        ['bob', 'REQUEST_CHANGES', '2026-03-01T10:00:02.500Z', second],
      ]);
      expect(events.every((e) => e.body === '')).toBe(true);
      // The approvals API says who approves now, with no time.
      expect((await client.listPullReviews('acme', 'app', mr)).map((r) => [r.user?.login, r.submittedAt])).toEqual([['alice', null]]);
    } finally {
      await gitlab.close();
    }
  });
});
