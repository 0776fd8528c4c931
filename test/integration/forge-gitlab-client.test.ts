import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createForgeAccounts, createGitLabClient, ForgeError, gitlabApiUrl } from '../../src/forge/index.js';
import { describeForgeClientConformance } from '../conformance/forge-client.js';
import { createFakeGitLab, type FakeGitLab } from '../fakes/gitlab/index.js';

describeForgeClientConformance('GitLab client against the fake GitLab', async () => {
  const gitlab = await createFakeGitLab();
  const bot = gitlab.addUser('claude-dev', { bot: true });
  for (const name of ['acme', 'reader', 'writer', 'maintainer', 'planner', 'stranger', 'alice']) gitlab.addUser(name);
  gitlab.addProject('acme', 'app');
  // Hooks need Maintainer on GitLab (a Developer is answered 403).
  gitlab.setAccess('acme', 'app', bot.username, 40);
  gitlab.setAccess('acme', 'app', 'acme', 50);
  gitlab.setAccess('acme', 'app', 'maintainer', 40);
  gitlab.setAccess('acme', 'app', 'writer', 30);
  gitlab.setAccess('acme', 'app', 'reader', 20);
  gitlab.setAccess('acme', 'app', 'planner', 15);
  gitlab.addLabel('acme', 'app', 'bug', '#D73A4A');
  gitlab.addLabel('acme', 'app', 'ready-for-development', '#0e8a16');
  gitlab.addLabel('acme', 'app', 'needs-review', '#fbca04');
  // Issues and merge requests count apart: #1 is another issue, #2 the suite's, !1 its merge request.
  gitlab.addIssue('acme', 'app', { title: 'An older issue', author: 'alice' });
  const issue = gitlab.addIssue('acme', 'app', { title: 'Spelling error in the README file', author: 'alice', labels: ['bug'] });
  const pull = gitlab.addMergeRequest('acme', 'app', { title: 'Update the README', author: 'alice', source: 'changes', target: 'main' });
  gitlab.approve('acme', 'app', pull, 'maintainer');
  return {
    client: createGitLabClient({ rootUrl: gitlab.url, token: bot.token }),
    badTokenClient: createGitLabClient({ rootUrl: gitlab.url, token: 'glpat-unknown-token-0123456789' }),
    badToken: 'glpat-unknown-token-0123456789',
    botLogin: bot.username,
    owner: 'acme',
    repo: 'app',
    issue: { number: issue, title: 'Spelling error in the README file', labels: [{ name: 'bug', color: 'd73a4a' }] },
    pull: { number: pull, title: 'Update the README', head: 'changes', base: 'main', reviews: [{ user: 'maintainer', state: 'APPROVED' }] },
    repoLabels: ['ready-for-development', 'needs-review'],
    missingNumber: 999,
    permissions: [
      ['acme', 'admin'],
      ['maintainer', 'admin'],
      ['writer', 'write'],
      ['reader', 'read'],
      ['planner', 'read'],
      ['stranger', 'none'],
    ],
    hookEvents: { create: ['issues_events', 'note_events'], edit: ['issues_events', 'merge_requests_events', 'note_events'] },
    pullsAreIssues: false,
    teardown: () => gitlab.close(),
  };
});

describe('GitLab client', () => {
  let gitlab: FakeGitLab;
  let token: string;
  beforeEach(async () => {
    gitlab = await createFakeGitLab();
    token = gitlab.addUser('claude-dev').token;
    gitlab.addUser('alice');
    gitlab.addProject('acme', 'app');
    gitlab.setAccess('acme', 'app', 'claude-dev', 30);
  });
  afterEach(async () => {
    await gitlab.close();
  });

  it('adds its own account to a merge request’s reviewers, keeping the others, once', async () => {
    const mr = gitlab.addMergeRequest('acme', 'app', { title: 'x', author: 'alice', source: 'feature', target: 'main' });
    gitlab.addUser('bob');
    gitlab.addReviewer('acme', 'app', mr, 'bob');
    const client = createGitLabClient({ rootUrl: gitlab.url, token });
    await client.addSelfAsReviewer!('acme', 'app', mr);
    await client.addSelfAsReviewer!('acme', 'app', mr);
    expect(gitlab.reviewers('acme', 'app', mr)).toEqual([
      { username: 'bob', state: 'unreviewed' },
      { username: 'claude-dev', state: 'unreviewed' },
    ]);
  });

  it('makes the API root from GITLAB_URL', () => {
    expect(gitlabApiUrl('https://gitlab.com')).toBe('https://gitlab.com/api/v4');
    expect(gitlabApiUrl('https://git.example.com/gitlab/')).toBe('https://git.example.com/gitlab/api/v4');
  });

  it('addresses a project by its URL-encoded path and sends the token as PRIVATE-TOKEN', async () => {
    const seen: Request[] = [];
    const client = createGitLabClient({
      rootUrl: gitlab.url,
      token,
      fetch: async (input, init) => {
        seen.push(new Request(input, init));
        return fetch(input, init);
      },
    });
    await client.getRepository('acme', 'app');
    expect(new URL(seen[0]!.url).pathname).toBe('/api/v4/projects/acme%2Fapp');
    expect(seen[0]!.headers.get('private-token')).toBe(token);
  });

  it('comments on an issue and on a merge request of the same number in their own places', async () => {
    const issue = gitlab.addIssue('acme', 'app', { title: 'issue one', author: 'alice' });
    const mr = gitlab.addMergeRequest('acme', 'app', { title: 'mr one', author: 'alice', source: 'x', target: 'main' });
    expect(issue).toBe(mr);
    const client = createGitLabClient({ rootUrl: gitlab.url, token });
    const onIssue = await client.createComment('acme', 'app', issue, 'on the issue');
    const onMr = await client.createComment('acme', 'app', mr, 'on the merge request', 'pull');
    expect(gitlab.notes('acme', 'app', issue).map((n) => n.body)).toEqual(['on the issue']);
    expect(gitlab.notes('acme', 'app', mr, 'pull').map((n) => n.body)).toEqual(['on the merge request']);
    expect(onIssue.htmlUrl).toBe(`${gitlab.url}/acme/app/-/issues/${issue}#note_${onIssue.id}`);
    expect(onMr.htmlUrl).toBe(`${gitlab.url}/acme/app/-/merge_requests/${mr}#note_${onMr.id}`);
  });

  it('follows pagination past one page of notes, and leaves GitLab’s system notes out', async () => {
    const number = gitlab.addIssue('acme', 'app', { title: 'busy', author: 'alice' });
    const item = gitlab.item('acme', 'app', number)!;
    for (let i = 0; i < 230; i++) {
      const at = gitlab.state.timestamp();
      item.notes.push({
        id: gitlab.state.id(),
        author: 'alice',
        body: `note ${i}`,
        system: i % 10 === 0,
        createdAt: at,
        updatedAt: at,
        awards: [],
      });
    }
    const comments = await createGitLabClient({ rootUrl: gitlab.url, token }).listComments('acme', 'app', number);
    expect(comments).toHaveLength(207);
    expect(comments[0]!.body).toBe('note 1');
    expect(gitlab.requests.filter((r) => r.endsWith('/notes'))).toHaveLength(3);
  });

  it('reads a private project it cannot see as 404 (not 403), and a write below its access level as 403', async () => {
    gitlab.addProject('acme', 'secret');
    const client = createGitLabClient({ rootUrl: gitlab.url, token });
    await expect(client.getRepository('acme', 'secret')).rejects.toMatchObject({ status: 404, forgeMessage: '404 Project Not Found' });
    gitlab.setAccess('acme', 'app', 'claude-dev', 10);
    await expect(client.createLabel('acme', 'app', { name: 'x', color: '#ffffff' })).rejects.toMatchObject({ status: 403 });
  });

  it('says none for a user who is no member, and 404 for one GitLab does not know', async () => {
    const client = createGitLabClient({ rootUrl: gitlab.url, token });
    expect(await client.getUserPermission('acme', 'app', 'alice')).toBe('none');
    const err = await client.getUserPermission('acme', 'app', 'nobody').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ForgeError);
    expect(err).toMatchObject({ status: 404 });
    await expect(client.getUserPermission('acme', 'missing', 'alice')).rejects.toMatchObject({ status: 404 });
  });

  it('never lets add_labels create a label: a name the project lacks is dropped', async () => {
    gitlab.addLabel('acme', 'app', 'bug');
    const number = gitlab.addIssue('acme', 'app', { title: 't', author: 'alice' });
    const client = createGitLabClient({ rootUrl: gitlab.url, token });
    const labels = await client.addIssueLabels('acme', 'app', number, ['bug', 'invented']);
    expect(labels.map((l) => l.name)).toEqual(['bug']);
    expect((await client.listRepoLabels('acme', 'app')).map((l) => l.name)).toEqual(['bug']);
  });

  it('reads label changes as the timeline catch-up compares, with who made them', async () => {
    gitlab.addLabel('acme', 'app', 'ready-for-development');
    const number = gitlab.addIssue('acme', 'app', { title: 't', author: 'alice' });
    gitlab.labelItem('acme', 'app', number, 'ready-for-development', 'alice');
    const timeline = await createGitLabClient({ rootUrl: gitlab.url, token }).listTimeline('acme', 'app', number);
    expect(timeline).toMatchObject([{ kind: 'label_added', user: 'alice', label: 'ready-for-development' }]);
  });

  it('creates a hook with only the events asked for (GitLab turns push_events on unless told)', async () => {
    gitlab.setAccess('acme', 'app', 'claude-dev', 40);
    const client = createGitLabClient({ rootUrl: gitlab.url, token });
    const hook = await client.createHook('acme', 'app', {
      url: 'https://baton.example/webhook/gitlab',
      secret: 's3cret',
      events: ['issues_events'],
    });
    expect(hook.events).toEqual(['issues_events']);
    expect(gitlab.hooks('acme', 'app')[0]).toMatchObject({ token: 's3cret', flags: { push_events: false, issues_events: true } });
    await client.editHook('acme', 'app', hook.id, { url: 'https://baton.example/webhook/gitlab', events: ['note_events'] });
    // The edit keeps the token.
    expect(gitlab.hooks('acme', 'app')[0]).toMatchObject({ token: 's3cret', flags: { note_events: true, issues_events: false } });
  });

  it('names GitLab accounts gitlab:dev and gitlab:review, the review token defaulting to the dev one', () => {
    const accounts = createForgeAccounts({
      gitea: {},
      bots: { dev: { username: 'claude-dev' }, review: { username: 'claude-review' } },
      gitlab: { url: gitlab.url, apiUrl: gitlabApiUrl(gitlab.url), tokens: { dev: token, review: token } },
    });
    expect(Object.keys(accounts).sort()).toEqual(['gitlab:dev', 'gitlab:review']);
  });
});
