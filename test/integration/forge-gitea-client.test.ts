import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createForgeAccounts, createGiteaClient, ForgeError, normalizeLabelColor } from '../../src/forge/index.js';
import { createFakeGitea, type FakeGitea } from '../fakes/gitea/index.js';

describe('Gitea client failures', () => {
  let gitea: FakeGitea;
  let token: string;
  beforeEach(async () => {
    gitea = await createFakeGitea();
    token = gitea.addUser('claude-dev').token;
    gitea.addRepo('acme', 'app');
    gitea.addIssue('acme', 'app', { title: 'x', author: 'claude-dev' });
  });
  afterEach(async () => {
    await gitea.close();
  });

  const failure = (promise: Promise<unknown>) =>
    promise.then(
      () => expect.fail('expected a ForgeError'),
      (err: unknown) => err as ForgeError,
    );

  it('sends the token as "Authorization: token …"', async () => {
    await createGiteaClient({ baseUrl: gitea.url, token }).getCurrentUser();
    expect(gitea.requests.at(-1)).toMatchObject({ path: '/api/v1/user', auth: 'token', status: 200 });
  });

  it('tolerates a trailing slash on the base URL', async () => {
    const me = await createGiteaClient({ baseUrl: `${gitea.url}/`, token }).getCurrentUser();
    expect(me.login).toBe('claude-dev');
  });

  it('marks a 5xx as retryable and keeps Gitea’s message', async () => {
    gitea.failNext(1, { status: 502, body: { message: 'upstream exploded', url: 'x' } });
    const err = await failure(createGiteaClient({ baseUrl: gitea.url, token }).getIssue('acme', 'app', 1));
    expect(err).toBeInstanceOf(ForgeError);
    expect(err).toMatchObject({ status: 502, retryable: true, kind: 'http', forgeMessage: 'upstream exploded' });
    expect(err.message).toContain('GET /repos/acme/app/issues/1');
  });

  it('marks a dropped connection as a retryable network error', async () => {
    gitea.dropNext(1);
    const err = await failure(createGiteaClient({ baseUrl: gitea.url, token }).createComment('acme', 'app', 1, 'x'));
    expect(err).toMatchObject({ kind: 'network', retryable: true, status: undefined });
  });

  it('gives up after timeoutMs with a retryable timeout', async () => {
    gitea.delayNext(1, 2_000);
    const err = await failure(createGiteaClient({ baseUrl: gitea.url, token, timeoutMs: 50 }).getCurrentUser());
    expect(err).toMatchObject({ kind: 'timeout', retryable: true });
  });

  it('reads every page of a long list', async () => {
    for (let i = 0; i < 75; i++) gitea.addLabel('acme', 'app', { name: `label-${String(i).padStart(2, '0')}` });
    const labels = await createGiteaClient({ baseUrl: gitea.url, token }).listRepoLabels('acme', 'app');
    expect(labels).toHaveLength(75);
    expect(new Set(labels.map((l) => l.id)).size).toBe(75);
    expect(gitea.requests.filter((r) => r.path.endsWith('/labels'))).toHaveLength(2);
  });

  it('marks 423 (archived repository) as permanent', async () => {
    gitea.setArchived('acme', 'app', true);
    const err = await failure(createGiteaClient({ baseUrl: gitea.url, token }).createComment('acme', 'app', 1, 'x'));
    expect(err).toMatchObject({ status: 423, retryable: false });
  });

  it('never puts the token into an error, even when the server echoes it', async () => {
    gitea.failNext(1, { status: 500, body: { message: `bad token ${token}` } });
    const err = await failure(createGiteaClient({ baseUrl: gitea.url, token }).getCurrentUser());
    expect(err.message).not.toContain(token);
    expect(err.forgeMessage).not.toContain(token);
  });
});

describe('Gitea client with a scripted fetch', () => {
  const scripted = (...responses: Response[]): typeof fetch => {
    const queue = [...responses];
    return async () => queue.shift() ?? new Response('{}', { status: 500 });
  };
  const comment = { id: 7, body: 'b', user: { id: 1, login: 'claude-dev' }, html_url: 'h', created_at: 't', updated_at: 't' };

  it('keeps paging when the server caps the page size below what was asked', async () => {
    const page = (from: number, count: number) =>
      Response.json(
        Array.from({ length: count }, (_, i) => ({ id: from + i, name: `l${from + i}`, color: 'ee0701' })),
        { headers: { 'x-total-count': '45' } },
      );
    const client = createGiteaClient({ baseUrl: 'http://gitea.invalid', token: 't', fetch: scripted(page(1, 30), page(31, 15)) });
    expect(await client.listRepoLabels('acme', 'app')).toHaveLength(45);
  });

  it('reads the comment back when an edit answers 204', async () => {
    const client = createGiteaClient({
      baseUrl: 'http://gitea.invalid',
      token: 't',
      fetch: scripted(new Response(null, { status: 204 }), Response.json(comment)),
    });
    expect(await client.editComment('acme', 'app', 7, 'b')).toMatchObject({ id: 7, body: 'b' });
  });

  it('keeps Retry-After of a 429 and treats it as retryable', async () => {
    const client = createGiteaClient({
      baseUrl: 'http://gitea.invalid',
      token: 't',
      fetch: scripted(Response.json({ message: 'slow down' }, { status: 429, headers: { 'retry-after': '7' } })),
    });
    await expect(client.getCurrentUser()).rejects.toMatchObject({ status: 429, retryable: true, retryAfterMs: 7_000 });
  });

  it('reports a proxy’s HTML page as a protocol error, not a crash', async () => {
    const client = createGiteaClient({
      baseUrl: 'http://gitea.invalid',
      token: 't',
      fetch: scripted(new Response('<html>', { status: 200 })),
    });
    await expect(client.getCurrentUser()).rejects.toMatchObject({ kind: 'protocol', retryable: true });
  });

  it('maps the legacy "owner" permission to admin and unknown ones to none', async () => {
    const client = createGiteaClient({
      baseUrl: 'http://gitea.invalid',
      token: 't',
      fetch: scripted(Response.json({ permission: 'owner' }), Response.json({ permission: 'superuser' })),
    });
    expect(await client.getUserPermission('acme', 'app', 'acme')).toBe('admin');
    expect(await client.getUserPermission('acme', 'app', 'x')).toBe('none');
  });
});

describe('normalizeLabelColor', () => {
  it.each([
    ['ee0701', '#ee0701'],
    ['#EE0701', '#ee0701'],
    ['#abc', '#aabbcc'],
    [' 00AABB ', '#00aabb'],
    ['', ''],
  ])('%j → %j', (input, expected) => {
    expect(normalizeLabelColor(input)).toBe(expected);
  });
});

describe('createForgeAccounts', () => {
  it('gives each bot with a token its own client acting as that bot', async () => {
    const gitea = await createFakeGitea();
    try {
      const dev = gitea.addUser('claude-dev').token;
      const review = gitea.addUser('claude-review').token;
      const accounts = createForgeAccounts({
        gitea: { url: gitea.url },
        bots: { dev: { username: 'claude-dev', token: dev }, review: { username: 'claude-review', token: review } },
      });
      expect((await accounts.dev!.getCurrentUser()).login).toBe('claude-dev');
      expect((await accounts.review!.getCurrentUser()).login).toBe('claude-review');
    } finally {
      await gitea.close();
    }
  });

  it('is empty without GITEA_URL', () => {
    const accounts = createForgeAccounts({ gitea: {}, bots: { dev: { username: 'd', token: 'x' }, review: { username: 'r' } } });
    expect(Object.keys(accounts)).toEqual([]);
  });
});
