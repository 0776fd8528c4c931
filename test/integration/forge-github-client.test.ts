import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createForgeAccounts, createGitHubClient, ForgeError, githubApiUrl } from '../../src/forge/index.js';
import { describeForgeClientConformance } from '../conformance/forge-client.js';
import { seedGitHubConformance } from '../conformance/github-world.js';
import { createFakeGitHub, type FakeGitHub } from '../fakes/github/index.js';

describeForgeClientConformance('GitHub client against the fake GitHub', async () => {
  const github = await createFakeGitHub();
  const bot = github.addUser('claude-dev[bot]', { type: 'Bot' });
  github.addRepo('acme', 'app');
  // Hooks need repository admin on GitHub (a non-admin is answered 404).
  github.setPermission('acme', 'app', bot.login, 'admin');
  return {
    ...seedGitHubConformance(github),
    client: createGitHubClient({ apiUrl: github.apiUrl, token: bot.token }),
    badTokenClient: createGitHubClient({ apiUrl: github.apiUrl, token: 'ghp_unknown-token-0123456789' }),
    badToken: 'ghp_unknown-token-0123456789',
    botLogin: bot.login,
    teardown: () => github.close(),
  };
});

describe('GitHub client', () => {
  let github: FakeGitHub;
  let token: string;
  beforeEach(async () => {
    github = await createFakeGitHub();
    token = github.addUser('claude-dev').token;
    github.addRepo('acme', 'app');
    github.setPermission('acme', 'app', 'claude-dev', 'admin');
    github.addLabel('acme', 'app', 'bug');
    github.addIssue('acme', 'app', { title: 'x', author: 'claude-dev' });
  });
  afterEach(async () => {
    await github.close();
  });

  it('finds the API of github.com and of an Enterprise Server', () => {
    expect(githubApiUrl('https://github.com')).toBe('https://api.github.com');
    expect(githubApiUrl('https://github.com/')).toBe('https://api.github.com');
    expect(githubApiUrl('https://ghe.example.com')).toBe('https://ghe.example.com/api/v3');
  });

  it('drops a label name the repository does not define instead of letting GitHub create it', async () => {
    const client = createGitHubClient({ apiUrl: github.apiUrl, token });
    const after = await client.addIssueLabels('acme', 'app', 1, ['bug', 'no-such-label']);
    expect(after.map((l) => l.name)).toEqual(['bug']);
    expect((await client.listRepoLabels('acme', 'app')).map((l) => l.name)).toEqual(['bug']);
  });

  it('reads every page through Link: rel="next"', async () => {
    for (let i = 0; i < 130; i++) github.addLabel('acme', 'app', `label-${i}`);
    const labels = await createGitHubClient({ apiUrl: github.apiUrl, token }).listRepoLabels('acme', 'app');
    expect(labels).toHaveLength(131);
    expect(github.requests.filter((r) => r.endsWith('/repos/acme/app/labels'))).toHaveLength(2);
  });

  it('keeps a hook’s secret when its URL or events change', async () => {
    const client = createGitHubClient({ apiUrl: github.apiUrl, token });
    const hook = await client.createHook('acme', 'app', {
      url: 'https://baton.example/webhook/github',
      secret: 's3cret',
      events: ['issues'],
    });
    await client.editHook('acme', 'app', hook.id, { url: 'https://baton.example/webhook/github', events: ['issues', 'pull_request'] });
    expect(github.hooks('acme', 'app')[0]).toMatchObject({ secret: 's3cret', events: ['issues', 'pull_request'], contentType: 'json' });
  });

  it('marks a 5xx retryable and a spent rate limit (403, remaining 0) retryable too', async () => {
    const client = createGitHubClient({ apiUrl: github.apiUrl, token });
    github.failNext('/issues/1', 502);
    await expect(client.getIssue('acme', 'app', 1)).rejects.toMatchObject({ status: 502, retryable: true });
    const limited = createGitHubClient({
      apiUrl: 'https://api.github.example',
      token,
      fetch: async () =>
        new Response(JSON.stringify({ message: 'API rate limit exceeded' }), {
          status: 403,
          headers: { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(Math.floor(Date.now() / 1000) + 30) },
        }),
    });
    const err = await limited.getCurrentUser().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ForgeError);
    expect(err).toMatchObject({ retryable: true, forgeMessage: 'API rate limit exceeded' });
    expect((err as ForgeError).retryAfterMs).toBeGreaterThan(20_000);
  });

  it('sends a bearer token, the API version and a User-Agent', async () => {
    const seen: Headers[] = [];
    const client = createGitHubClient({
      apiUrl: github.apiUrl,
      token,
      fetch: async (input, init) => {
        seen.push(new Headers(init?.headers));
        return fetch(input, init);
      },
    });
    await client.getCurrentUser();
    expect(seen[0]!.get('authorization')).toBe(`Bearer ${token}`);
    expect(seen[0]!.get('x-github-api-version')).toBe('2022-11-28');
    expect(seen[0]!.get('user-agent')).toBeTruthy();
  });

  it('is made per bot account from GITHUB_* settings, beside Gitea’s', () => {
    const accounts = createForgeAccounts({
      gitea: { url: 'http://gitea.test' },
      bots: { dev: { username: 'claude-dev', token: 'g1' }, review: { username: 'claude-review', token: 'g2' } },
      github: { url: github.url, apiUrl: github.apiUrl, tokens: { dev: token, review: token } },
    });
    expect(Object.keys(accounts).sort()).toEqual(['dev', 'github:dev', 'github:review', 'review']);
  });
});
