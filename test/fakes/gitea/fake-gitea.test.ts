import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { until } from '../../helpers/until.js';
import { createFakeGitea, type FakeGitea } from './index.js';

/** The fake must answer like Gitea itself (reference/gitea/API.md): these pin the wire contract. */
describe('fake Gitea HTTP contract', () => {
  let gitea: FakeGitea;
  let token: string;
  let issueNumber: number;
  const api = (path: string, init: RequestInit & { auth?: string | null } = {}) => {
    const { auth, ...rest } = init;
    const headers = new Headers(rest.headers);
    if (auth !== null) headers.set('authorization', auth ?? `token ${token}`);
    if (rest.body) headers.set('content-type', 'application/json');
    return fetch(`${gitea.url}/api/v1${path}`, { ...rest, headers });
  };

  beforeEach(async () => {
    gitea = await createFakeGitea();
    token = gitea.addUser('claude-dev').token;
    gitea.addUser('reader');
    gitea.addRepo('acme', 'app');
    gitea.addCollaborator('acme', 'app', 'claude-dev', 'write');
    gitea.addLabel('acme', 'app', { name: 'bug', color: 'ee0701' });
    gitea.addLabel('acme', 'app', { name: 'agent:running', color: '00aabb' });
    issueNumber = gitea.addIssue('acme', 'app', { title: 'Broken', author: 'reader' }).number;
  });
  afterEach(async () => {
    await gitea.close();
  });

  describe('authentication (parseToken)', () => {
    it.each([
      ['Authorization: token X', (t: string) => ({ path: '/user', auth: `token ${t}` })],
      ['Authorization: Bearer X', (t: string) => ({ path: '/user', auth: `Bearer ${t}` })],
      ['Authorization: bEaReR X', (t: string) => ({ path: '/user', auth: `bEaReR ${t}` })],
      ['?token=X', (t: string) => ({ path: `/user?token=${t}`, auth: null })],
      ['?access_token=X', (t: string) => ({ path: `/user?access_token=${t}`, auth: null })],
      ['Basic user:TOKEN', (t: string) => ({ path: '/user', auth: `Basic ${Buffer.from(`claude-dev:${t}`).toString('base64')}` })],
    ])('accepts %s', async (_name, form) => {
      const { path, auth } = form(token);
      const res = await api(path, { auth });
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ login: 'claude-dev' });
    });

    it.each([
      ['a capitalised "Token" scheme', (t: string) => `Token ${t}`],
      ['a wrong token', () => 'token not-a-real-token'],
      ['three fields', (t: string) => `token ${t} extra`],
      ['Basic naming another user', (t: string) => `Basic ${Buffer.from(`reader:${t}`).toString('base64')}`],
    ])('answers 401 with an APIError body for %s', async (_name, header) => {
      const res = await api('/user', { auth: header(token) });
      expect(res.status).toBe(401);
      const body = await res.json();
      expect(body).toEqual({ message: expect.any(String), url: `${gitea.url}/api/swagger` });
    });

    it('answers 401 without any credentials', async () => {
      const res = await api(`/repos/acme/app/issues/${issueNumber}`, { auth: null });
      expect(res.status).toBe(401);
    });
  });

  it('answers 404 with message, url and errors for a missing issue or repository', async () => {
    for (const path of ['/repos/acme/app/issues/99', '/repos/acme/nope/issues/1', '/repos/acme/app/pulls/1']) {
      const res = await api(path);
      expect(res.status, path).toBe(404);
      expect(await res.json()).toEqual({ message: "The target couldn't be found.", url: `${gitea.url}/api/swagger`, errors: null });
    }
  });

  it('creates a comment with 201, edits it with 200 and lists it', async () => {
    const created = await api(`/repos/acme/app/issues/${issueNumber}/comments`, {
      method: 'POST',
      body: JSON.stringify({ body: 'hello' }),
    });
    expect(created.status).toBe(201);
    const comment = (await created.json()) as { id: number; body: string; user: { login: string }; html_url: string };
    expect(comment).toMatchObject({ body: 'hello', user: { login: 'claude-dev' } });
    expect(comment.html_url).toContain(`/acme/app/issues/${issueNumber}#issuecomment-${comment.id}`);

    const edited = await api(`/repos/acme/app/issues/comments/${comment.id}`, { method: 'PATCH', body: JSON.stringify({ body: 'bye' }) });
    expect(edited.status).toBe(200);
    expect(await edited.json()).toMatchObject({ id: comment.id, body: 'bye' });

    const listed = await api(`/repos/acme/app/issues/${issueNumber}/comments`);
    expect(listed.headers.get('x-total-count')).toBe('1');
    expect(gitea.comments('acme', 'app', issueNumber)).toEqual([{ id: comment.id, author: 'claude-dev', body: 'bye' }]);
  });

  it('rejects a comment without a body with 422', async () => {
    const res = await api(`/repos/acme/app/issues/${issueNumber}/comments`, { method: 'POST', body: '{}' });
    expect(res.status).toBe(422);
    expect(await res.json()).toMatchObject({ message: expect.any(String), url: expect.any(String) });
  });

  it('answers 423 for writes to an archived repository', async () => {
    gitea.setArchived('acme', 'app', true);
    const res = await api(`/repos/acme/app/issues/${issueNumber}/comments`, { method: 'POST', body: JSON.stringify({ body: 'x' }) });
    expect(res.status).toBe(423);
    expect((await api(`/repos/acme/app/issues/${issueNumber}`)).status).toBe(200);
  });

  it('adds labels by id or name (200, full set), removes one by id (204) and clears them (204)', async () => {
    const labels = (await (await api('/repos/acme/app/labels')).json()) as { id: number; name: string }[];
    const bug = labels.find((l) => l.name === 'bug')!;
    const added = await api(`/repos/acme/app/issues/${issueNumber}/labels`, { method: 'POST', body: JSON.stringify({ labels: [bug.id] }) });
    expect(added.status).toBe(200);
    expect(((await added.json()) as { name: string }[]).map((l) => l.name)).toEqual(['bug']);
    const byName = await api(`/repos/acme/app/issues/${issueNumber}/labels`, {
      method: 'POST',
      body: JSON.stringify({ labels: ['agent:running'] }),
    });
    expect(((await byName.json()) as { name: string }[]).map((l) => l.name)).toEqual(['agent:running', 'bug']);

    const removed = await api(`/repos/acme/app/issues/${issueNumber}/labels/${bug.id}`, { method: 'DELETE' });
    expect(removed.status).toBe(204);
    expect(await removed.text()).toBe('');
    expect((await api(`/repos/acme/app/issues/${issueNumber}/labels/9999`, { method: 'DELETE' })).status).toBe(422);

    const replaced = await api(`/repos/acme/app/issues/${issueNumber}/labels`, {
      method: 'PUT',
      body: JSON.stringify({ labels: ['bug'] }),
    });
    expect(((await replaced.json()) as { name: string }[]).map((l) => l.name)).toEqual(['bug']);
    expect((await api(`/repos/acme/app/issues/${issueNumber}/labels`, { method: 'DELETE' })).status).toBe(204);
    expect(await (await api(`/repos/acme/app/issues/${issueNumber}/labels`)).json()).toEqual([]);
  });

  it('refuses label changes to a user without write access with 403', async () => {
    const readerToken = gitea.addToken('reader');
    const res = await api(`/repos/acme/app/issues/${issueNumber}/labels`, {
      method: 'POST',
      auth: `token ${readerToken}`,
      body: JSON.stringify({ labels: ['bug'] }),
    });
    expect(res.status).toBe(403);
  });

  it('serves an issue that is a PR with pull_request meta, and the PR with its reviews', async () => {
    const pr = gitea.addPullRequest('acme', 'app', { title: 'Fix', author: 'claude-dev', head: 'fix', base: 'main' });
    gitea.addReview('acme', 'app', pr.number, { author: 'reader', state: 'REQUEST_CHANGES', body: 'no' });
    const asIssue = (await (await api(`/repos/acme/app/issues/${pr.number}`)).json()) as { pull_request: unknown };
    expect(asIssue.pull_request).toMatchObject({ merged: false, draft: false });
    const plain = (await (await api(`/repos/acme/app/issues/${issueNumber}`)).json()) as { pull_request: unknown };
    expect(plain.pull_request).toBeNull();
    const pull = await (await api(`/repos/acme/app/pulls/${pr.number}`)).json();
    expect(pull).toMatchObject({ number: pr.number, head: { ref: 'fix' }, base: { ref: 'main' }, merged: false });
    const reviews = await (await api(`/repos/acme/app/pulls/${pr.number}/reviews`)).json();
    expect(reviews).toMatchObject([{ state: 'REQUEST_CHANGES', body: 'no', user: { login: 'reader' } }]);
  });

  it("lists the repository's comments like ListRepoIssueComments: since on updated_at, oldest first, paged only with page", async () => {
    let clock = Date.parse('2026-05-01T10:00:00.900Z');
    const timed = await createFakeGitea({ now: () => new Date(clock) });
    try {
      const own = timed.addUser('claude-dev').token;
      timed.addUser('reader');
      timed.addRepo('acme', 'app');
      const issue = timed.addIssue('acme', 'app', { title: 'One', author: 'reader' });
      const pr = timed.addPullRequest('acme', 'app', { title: 'Two', author: 'reader' });
      const old = timed.addComment('acme', 'app', issue.number, { author: 'reader', body: 'old' });
      clock += 60_000;
      const onPull = timed.addComment('acme', 'app', pr.number, { author: 'reader', body: 'on the pull request' });
      const newer = timed.addComment('acme', 'app', issue.number, { author: 'reader', body: 'newer' });
      const list = async (query: string) => {
        const res = await fetch(`${timed.url}/api/v1/repos/acme/app/issues/comments?${query}`, {
          headers: { authorization: `token ${own}` },
        });
        return { status: res.status, total: res.headers.get('x-total-count'), body: (await res.json()) as Array<Record<string, unknown>> };
      };
      // Inclusive, whole seconds: 10:01:00Z finds what was written at 10:01:00.900.
      const since = await list('since=2026-05-01T10:01:00Z');
      expect(since.body.map((c) => c.id)).toEqual([onPull.id, newer.id]);
      expect(since.total).toBe('2');
      expect(since.body[0]).toMatchObject({ issue_url: '', pull_request_url: expect.stringMatching(/\/pulls\/2$/) });
      expect(since.body[1]).toMatchObject({ pull_request_url: '', issue_url: expect.stringMatching(/\/issues\/1$/) });
      // Without `page` everything comes at once, whatever `limit` says; with it, pages of `limit`.
      expect((await list('limit=1')).body).toHaveLength(3);
      expect((await list('page=2&limit=1')).body.map((c) => c.id)).toEqual([onPull.id]);
      expect((await list('page=1&limit=1')).body.map((c) => c.id)).toEqual([old.id]);
      expect((await list('since=yesterday')).status).toBe(422);
    } finally {
      await timed.close();
    }
  });

  it('lists reviews like ListPullReviews: pending ones only to their author, counted in X-Total-Count all the same', async () => {
    const pr = gitea.addPullRequest('acme', 'app', { title: 'Feature', author: 'reader' });
    gitea.addReview('acme', 'app', pr.number, { author: 'reader', state: 'PENDING', body: 'draft' });
    const approved = gitea.addReview('acme', 'app', pr.number, { author: 'reader', state: 'APPROVED', body: 'ok' });
    const res = await api(`/repos/acme/app/pulls/${pr.number}/reviews`);
    expect(res.headers.get('x-total-count')).toBe('2');
    expect(((await res.json()) as Array<{ id: number }>).map((r) => r.id)).toEqual([approved.id]);
  });

  it('answers the collaborator permission endpoint like GetRepoPermissions', async () => {
    const res = await api('/repos/acme/app/collaborators/claude-dev/permission');
    expect(await res.json()).toMatchObject({ permission: 'write', role_name: 'write', user: { login: 'claude-dev' } });
    // A non-admin asking about someone else is refused.
    expect((await api('/repos/acme/app/collaborators/reader/permission')).status).toBe(403);
    gitea.addCollaborator('acme', 'app', 'claude-dev', 'admin');
    expect(await (await api('/repos/acme/app/collaborators/reader/permission')).json()).toMatchObject({ permission: 'read' });
    expect((await api('/repos/acme/app/collaborators/ghost/permission')).status).toBe(404);
  });

  describe('onboarding endpoints (reference/gitea/API.md "Endpoints for catch-up and onboarding")', () => {
    const hookBody = (over: Record<string, unknown> = {}) =>
      JSON.stringify({
        type: 'gitea',
        config: { url: 'https://baton.example/webhook/gitea', content_type: 'json', secret: 's3cret' },
        ...over,
      });

    it('answers GET /repos/{owner}/{repo} with the token user’s own permissions', async () => {
      expect(await (await api('/repos/acme/app')).json()).toMatchObject({
        full_name: 'acme/app',
        archived: false,
        permissions: { admin: false, push: true, pull: true },
      });
      const reader = gitea.addToken('reader');
      expect(await (await api('/repos/acme/app', { auth: `token ${reader}` })).json()).toMatchObject({
        permissions: { admin: false, push: false, pull: true },
      });
      expect((await api('/repos/acme/nope')).status).toBe(404);
    });

    it('lets only repository admins touch hooks', async () => {
      const res = await api('/repos/acme/app/hooks');
      expect(res.status).toBe(403);
      expect(await res.json()).toMatchObject({ message: 'user should be an owner or a collaborator with admin write of a repository' });
      expect((await api('/repos/acme/app/hooks', { method: 'POST', body: hookBody() })).status).toBe(403);
    });

    it('creates a hook inactive unless asked, push only without events, never showing the secret', async () => {
      gitea.addCollaborator('acme', 'app', 'claude-dev', 'admin');
      const created = await api('/repos/acme/app/hooks', { method: 'POST', body: hookBody() });
      expect(created.status).toBe(201);
      const hook = (await created.json()) as Record<string, unknown>;
      expect(hook).toMatchObject({ type: 'gitea', active: false, events: ['push'], branch_filter: '', authorization_header: '' });
      expect(hook.config).toEqual({ url: 'https://baton.example/webhook/gitea', content_type: 'json' });
      expect(JSON.stringify(await (await api('/repos/acme/app/hooks')).json())).not.toContain('s3cret');
      expect(gitea.hooks('acme', 'app')[0]).toMatchObject({ secret: 's3cret', active: false });
    });

    it('expands the issues and pull_request groups, ignores unknown names and answers with single names', async () => {
      gitea.addCollaborator('acme', 'app', 'claude-dev', 'admin');
      const created = await api('/repos/acme/app/hooks', {
        method: 'POST',
        body: hookBody({ events: ['ISSUES', 'pull_request_only', 'pull_request_review', 'no_such_event'], active: true }),
      });
      const events = ((await created.json()) as { events: string[] }).events;
      expect(events.sort()).toEqual([
        'issue_assign',
        'issue_comment',
        'issue_label',
        'issue_milestone',
        'issues',
        'pull_request',
        'pull_request_review',
      ]);
    });

    it('refuses a bad create with 422 naming the problem', async () => {
      gitea.addCollaborator('acme', 'app', 'claude-dev', 'admin');
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ type: 'jenkins' }, 'Invalid hook type: jenkins'],
        [{ config: { content_type: 'json' } }, 'Missing config option: url'],
        [{ config: { url: 'https://x.example' } }, 'Missing config option: content_type'],
        [{ config: { url: 'https://x.example', content_type: 'xml' } }, 'Invalid content type'],
      ];
      for (const [over, message] of cases) {
        const res = await api('/repos/acme/app/hooks', { method: 'POST', body: hookBody(over) });
        expect(res.status, message).toBe(422);
        expect(await res.json()).toMatchObject({ message });
      }
    });

    it('edits a hook the way Gitea does: omitted events become push, the branch filter empties, the secret is ignored', async () => {
      gitea.addCollaborator('acme', 'app', 'claude-dev', 'admin');
      const { id } = (await (
        await api('/repos/acme/app/hooks', { method: 'POST', body: hookBody({ events: ['issues'], active: true, branch_filter: 'main' }) })
      ).json()) as { id: number };
      const edited = await api(`/repos/acme/app/hooks/${id}`, { method: 'PATCH', body: JSON.stringify({ config: { secret: 'new' } }) });
      expect(edited.status).toBe(200);
      expect(await edited.json()).toMatchObject({
        events: ['push'],
        branch_filter: '',
        active: true,
        config: { url: 'https://baton.example/webhook/gitea' },
      });
      expect(gitea.hooks('acme', 'app')[0]!.secret).toBe('s3cret');
      expect((await api(`/repos/acme/app/hooks/${id}`, { method: 'DELETE' })).status).toBe(204);
      expect((await api(`/repos/acme/app/hooks/${id}`)).status).toBe(404);
    });

    it('shows the review flag as its delivery types when mimicking Gitea up to 1.23', async () => {
      const old = await createFakeGitea({ legacyHookReviewEvents: true });
      try {
        const admin = old.addUser('acme').token;
        old.addRepo('acme', 'app');
        const res = await fetch(`${old.url}/api/v1/repos/acme/app/hooks`, {
          method: 'POST',
          headers: { authorization: `token ${admin}`, 'content-type': 'application/json' },
          body: hookBody({ events: ['pull_request_review'] }),
        });
        expect(((await res.json()) as { events: string[] }).events).toEqual([
          'pull_request_review_approved',
          'pull_request_review_rejected',
          'pull_request_review_comment',
        ]);
      } finally {
        await old.close();
      }
    });

    it('creates labels with a normalised colour, accepting a duplicate name', async () => {
      const create = (body: unknown) => api('/repos/acme/app/labels', { method: 'POST', body: JSON.stringify(body) });
      const first = await create({ name: 'ready-for-development', color: '#0E8A16', description: 'go' });
      expect(first.status).toBe(201);
      expect(await first.json()).toMatchObject({ name: 'ready-for-development', color: '0e8a16', description: 'go' });
      expect((await create({ name: 'ready-for-development', color: 'abc' })).status).toBe(201);
      expect(gitea.labelNames('acme', 'app').filter((n) => n === 'ready-for-development')).toHaveLength(2);
      expect((await create({ name: 'x', color: 'blue' })).status).toBe(422);
      expect((await create({ color: '00aabb' })).status).toBe(422);
      const reader = gitea.addToken('reader');
      expect(
        (
          await api('/repos/acme/app/labels', {
            method: 'POST',
            auth: `token ${reader}`,
            body: JSON.stringify({ name: 'y', color: 'aaa' }),
          })
        ).status,
      ).toBe(403);
    });

    it('refuses a scoped token outside its scopes with 403 naming the scope, before looking at the repository', async () => {
      const scoped = gitea.addToken('claude-dev', undefined, ['read:repository', 'write:issue']);
      const as = (path: string, init: RequestInit = {}) => api(path, { ...init, auth: `token ${scoped}` });
      const user = await as('/user');
      expect(user.status).toBe(403);
      expect(await user.json()).toMatchObject({ message: 'token does not have at least one of required scope(s): [read:user]' });
      expect((await as('/repos/acme/app')).status).toBe(200);
      expect(
        (await as(`/repos/acme/app/issues/${issueNumber}/comments`, { method: 'POST', body: JSON.stringify({ body: 'ok' }) })).status,
      ).toBe(201);
      const hook = await as('/repos/acme/nope/hooks', { method: 'POST', body: hookBody() });
      expect(await hook.json()).toMatchObject({ message: 'token does not have at least one of required scope(s): [write:repository]' });
    });
  });

  it('injects failures, latency and dropped connections for matching requests only', async () => {
    gitea.failNext(2, { method: 'POST', status: 503 });
    expect((await api('/user')).status).toBe(200);
    const post = () => api(`/repos/acme/app/issues/${issueNumber}/comments`, { method: 'POST', body: JSON.stringify({ body: 'x' }) });
    expect((await post()).status).toBe(503);
    expect((await post()).status).toBe(503);
    expect((await post()).status).toBe(201);

    gitea.dropNext(1, { path: '/user' });
    await expect(api('/user')).rejects.toThrow();
    expect((await api('/user')).status).toBe(200);

    gitea.delayNext(1, 50);
    expect((await api('/user')).status).toBe(200);
    gitea.setLatency(20);
    expect((await api('/user')).status).toBe(200);
    gitea.clearFaults();
    expect(gitea.requests.map((r) => r.status)).toContain('dropped');
    expect(gitea.requests.every((r) => !JSON.stringify(r).includes(token))).toBe(true);
  });

  it('sends the headers a failure is armed with, such as Retry-After on a 429', async () => {
    gitea.failNext(1, { path: '/user', status: 429, headers: { 'retry-after': '3' } });
    const limited = await api('/user');
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('3');
    expect((await api('/user')).status).toBe(200);
  });

  it('loses the answer of a request it carried out: the comment exists, the client got no answer', async () => {
    gitea.loseAnswerNext(1, { method: 'POST' });
    const post = () => api(`/repos/acme/app/issues/${issueNumber}/comments`, { method: 'POST', body: JSON.stringify({ body: 'once' }) });
    await expect(post()).rejects.toThrow();
    await until(() => gitea.comments('acme', 'app', issueNumber).length === 1, 'the comment whose answer was lost');
    expect(gitea.comments('acme', 'app', issueNumber).map((c) => c.body)).toEqual(['once']);
    expect(gitea.requests.at(-1)?.status).toBe('dropped');
    expect((await post()).status).toBe(201);
  });
});
