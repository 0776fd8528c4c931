import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createMemoryProvider, type MemoryProvider } from '../../src/workspaces/index.js';
import { createFakeGitHub, type FakeGitHub } from '../fakes/github/index.js';
import { createFakeGitLab, type FakeGitLab } from '../fakes/gitlab/index.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createSqliteTestStore, type TestStore } from '../helpers/stores.js';
import { until } from '../helpers/until.js';

const DEV_TOKEN = 'forge-dev-bot-real-token-0123456789';
const REVIEW_TOKEN = 'forge-review-bot-real-token-0123456789';

/** What differs between the forges in these tests: their fake, paths, and how their tools send the capability. */
interface ForgeCase {
  name: 'GitHub' | 'GitHub App' | 'GitLab';
  forge: 'github' | 'gitlab';
  start(): Promise<{
    url: string;
    bare: string;
    ownId: number;
    otherId: number;
    env: Record<string, string>;
    /** Protects a branch on the forge (its branch API then says so). */
    protect(branch: string): void;
    /** The fake GitHub, for the App's own checks. */
    github?: FakeGitHub;
    /** The bot's real token upstream when it is not DEV_TOKEN (an installation token, once minted). */
    botToken?: () => string;
    close(): Promise<void>;
  }>;
  /** The API path of a repository under the gateway, by `owner/name` or numeric id. */
  repo(ref: string | number): string;
  /** How the forge's tools present a token to its API. */
  auth(capability: string): Record<string, string>;
  comment: string;
  /** Changes the bot could make but runs may not. */
  refused: [string, string, unknown][];
  release: { path: string; body: unknown; reason: string };
  graphql: string;
  /** A change the review account may not make. */
  edit: [string, string, unknown];
  /** Labelling an issue, which the review account may do (the tester's `ready-for-deployment`). */
  label: [string, string, unknown];
}

const githubCase: ForgeCase = {
  name: 'GitHub',
  forge: 'github',
  async start() {
    const github: FakeGitHub = await createFakeGitHub();
    github.addUser('claude-dev', { token: DEV_TOKEN });
    github.addUser('claude-review', { token: REVIEW_TOKEN });
    github.addUser('acme');
    github.addRepo('acme', 'app', { private: true });
    github.addRepo('acme', 'secret', { private: true });
    for (const repo of ['app', 'secret']) github.setPermission('acme', repo, 'claude-dev', 'admin');
    github.setPermission('acme', 'app', 'claude-review', 'write');
    github.addIssue('acme', 'app', { title: 'fix it', author: 'acme' });
    github.addIssue('acme', 'secret', { title: 'elsewhere', author: 'acme' });
    for (const label of ['bug', 'docs']) github.addLabel('acme', 'app', label);
    const bare = github.gitRepo('acme', 'app');
    const env = { GITHUB_URL: github.url, GITHUB_DEV_TOKEN: DEV_TOKEN, GITHUB_REVIEW_TOKEN: REVIEW_TOKEN, GITHUB_WEBHOOK_SECRET: 'x' };
    return {
      url: github.url,
      bare,
      ownId: github.state.repo('acme', 'app')!.id,
      otherId: github.state.repo('acme', 'secret')!.id,
      env,
      protect: (branch: string) => github.protectBranch('acme', 'app', branch),
      close: () => github.close(),
    };
  },
  repo: (ref) => (typeof ref === 'number' ? `/api/v3/repositories/${ref}` : `/api/v3/repos/${ref}`),
  auth: (capability) => ({ authorization: `Bearer ${capability}` }),
  comment: '/issues/1/comments',
  refused: [
    ['PUT', '/collaborators/mallory', { permission: 'admin' }],
    ['POST', '/keys', { title: 'k', key: 'ssh-ed25519 AAAA', read_only: false }],
    ['POST', '/hooks', { name: 'web', config: { url: 'https://evil.example' } }],
    ['PATCH', '', { default_branch: 'feature/issue-1-x', private: false }],
    ['PUT', '/contents/README.md', { message: 'owned', content: 'b3duZWQ=', branch: 'main' }],
    ['PUT', '/pulls/2/merge', {}],
    ['POST', '/transfer', { new_owner: 'mallory' }],
  ],
  release: {
    path: '/releases',
    body: { tag_name: 'v9', target_commitish: 'main' },
    reason: 'a release through the gateway must be a draft (publishing one makes its tag)',
  },
  graphql: '/api/graphql',
  edit: ['PATCH', '/issues/1', { state: 'closed' }],
  label: ['POST', '/issues/1/labels', { labels: ['bug'] }],
};

const cases: ForgeCase[] = [
  githubCase,
  {
    ...githubCase,
    name: 'GitHub App',
    async start() {
      // The dev bot is a GitHub App installed on both repositories: the gateway's tokens are installation tokens.
      const github: FakeGitHub = await createFakeGitHub();
      const app = github.addApp('baton-ci');
      github.addUser('claude-review', { token: REVIEW_TOKEN });
      github.addUser('acme');
      github.addRepo('acme', 'app', { private: true });
      github.addRepo('acme', 'secret', { private: true });
      github.installApp(app.id, 'acme', ['app', 'secret']);
      github.setPermission('acme', 'app', 'claude-review', 'write');
      github.addIssue('acme', 'app', { title: 'fix it', author: 'acme' });
      github.addIssue('acme', 'secret', { title: 'elsewhere', author: 'acme' });
      for (const label of ['bug', 'docs']) github.addLabel('acme', 'app', label);
      const bare = github.gitRepo('acme', 'app');
      const keyDir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-gateway-app-'));
      fs.writeFileSync(path.join(keyDir, 'app.pem'), app.privateKey, { mode: 0o600 });
      const env = {
        GITHUB_URL: github.url,
        GITHUB_APP_ID: String(app.id),
        GITHUB_APP_PRIVATE_KEY_FILE: path.join(keyDir, 'app.pem'),
        GITHUB_REVIEW_TOKEN: REVIEW_TOKEN,
        GITHUB_WEBHOOK_SECRET: 'x',
      };
      return {
        url: github.url,
        bare,
        ownId: github.state.repo('acme', 'app')!.id,
        otherId: github.state.repo('acme', 'secret')!.id,
        env,
        protect: (branch: string) => github.protectBranch('acme', 'app', branch),
        github,
        botToken: () => [...github.state.installationTokens.keys()].at(-1)!,
        close: async () => {
          await github.close();
          fs.rmSync(keyDir, { recursive: true, force: true });
        },
      };
    },
  },
  {
    name: 'GitLab',
    forge: 'gitlab',
    async start() {
      const gitlab: FakeGitLab = await createFakeGitLab();
      gitlab.addUser('claude-dev', { token: DEV_TOKEN });
      gitlab.addUser('claude-review', { token: REVIEW_TOKEN });
      gitlab.addProject('acme', 'app');
      gitlab.addProject('acme', 'secret');
      for (const project of ['app', 'secret']) gitlab.setAccess('acme', project, 'claude-dev', 40);
      gitlab.setAccess('acme', 'app', 'claude-review', 30);
      gitlab.addIssue('acme', 'app', { title: 'fix it', author: 'claude-dev' });
      gitlab.addIssue('acme', 'secret', { title: 'elsewhere', author: 'claude-dev' });
      for (const label of ['bug', 'docs']) gitlab.addLabel('acme', 'app', label);
      const bare = gitlab.gitRepo('acme', 'app');
      const env = { GITLAB_URL: gitlab.url, GITLAB_DEV_TOKEN: DEV_TOKEN, GITLAB_REVIEW_TOKEN: REVIEW_TOKEN, GITLAB_WEBHOOK_SECRET: 'x' };
      return {
        url: gitlab.url,
        bare,
        ownId: gitlab.state.project('acme/app')!.id,
        otherId: gitlab.state.project('acme/secret')!.id,
        env,
        protect: (branch: string) => gitlab.protectBranch('acme', 'app', branch),
        close: () => gitlab.close(),
      };
    },
    repo: (ref) => `/api/v4/projects/${typeof ref === 'number' ? ref : encodeURIComponent(ref)}`,
    auth: (capability) => ({ 'private-token': capability }),
    comment: '/issues/1/notes',
    refused: [
      ['POST', '/members', { user_id: 9, access_level: 50 }],
      ['POST', '/deploy_keys', { title: 'k', key: 'ssh-ed25519 AAAA', can_push: true }],
      ['POST', '/hooks', { url: 'https://evil.example' }],
      ['PUT', '', { default_branch: 'feature/issue-1-x', visibility: 'public' }],
      ['POST', '/repository/files/README.md', { branch: 'main', content: 'owned', commit_message: 'owned' }],
      ['POST', '/repository/commits', { branch: 'main', commit_message: 'owned', actions: [] }],
      ['PUT', '/merge_requests/1/merge', {}],
      ['DELETE', '/protected_branches/main', undefined],
    ],
    release: {
      path: '/releases',
      body: { tag_name: 'v9', ref: 'main' },
      reason: 'GitLab has no draft releases: one made through the API is published at once (and makes its tag)',
    },
    graphql: '/api/graphql',
    edit: ['PUT', '/issues/1', { state_event: 'close' }],
    label: ['PUT', '/issues/1', { add_labels: 'bug' }],
  },
];

describe.each(cases)('forge gateway on $name: a credential worth nothing outside its run', (forgeCase) => {
  let forge: Awaited<ReturnType<ForgeCase['start']>>;
  let t: TestStore;
  let server: TestApp;
  let provider: MemoryProvider;

  beforeEach(async () => {
    forge = await forgeCase.start();
    t = await createSqliteTestStore();
    provider = createMemoryProvider();
    server = await startTestApp(t, { env: forge.env, deps: { provider } });
  });
  afterEach(async () => {
    await server?.close();
    await t?.cleanup();
    await forge?.close();
  });

  async function startRun(account: 'dev' | 'review' = 'dev') {
    const { run } = await server.app.engine.enqueue({
      stage: account === 'dev' ? 'develop' : 'review-code',
      forge: forgeCase.forge,
      owner: 'acme',
      repo: 'app',
      number: 1,
      // As the ingress makes it: the forge in the key's request and in the payload the run keeps.
      payload: { forge: forgeCase.forge, account, ...(account === 'review' ? { isPull: true } : {}) },
    });
    await until(async () => (await server.app.runs.get(run.id))?.status === 'running', 'the run to be running');
    const spec = provider.created.find((s) => s.runId === run.id)!;
    return { id: run.id, spec, capability: spec.forgeToken! };
  }
  const gateway = (p: string, capability: string, init: RequestInit = {}) =>
    fetch(`${server.url}/gateway${p}`, {
      ...init,
      headers: { ...forgeCase.auth(capability), 'content-type': 'application/json', ...(init.headers as Record<string, string>) },
    });
  const own = (rest = '') => `${forgeCase.repo('acme/app')}${rest}`;
  const logOf = async (id: number) =>
    (await server.app.runs.events(id)).flatMap((e) => (e.type === 'run:progress' ? ((e.data?.lines as string[] | undefined) ?? []) : []));

  it('gives the workspace a capability and the gateway as its forge and clone URL, never the bot token', async () => {
    const { spec } = await startRun();
    expect(spec.forge).toBe(forgeCase.forge);
    expect(spec.forgeToken).toMatch(/^bgw_\d+_[A-Za-z0-9_-]{43}$/);
    expect(spec.forgeUrl).toMatch(/\/gateway$/);
    expect(spec.cloneUrl).toMatch(/\/gateway\/acme\/app\.git$/);
    expect(JSON.stringify(spec)).not.toContain(DEV_TOKEN);
  });

  it("serves the run's repository, by name and by id, and nothing else; the bot's other rights are refused", async () => {
    const { id, capability } = await startRun();
    expect((await gateway(own(), capability)).status).toBe(200);
    expect((await gateway(forgeCase.repo(forge.ownId), capability)).status).toBe(200);
    // The bot's real token there: the dev token, or the App's installation token the gateway minted.
    const real = forge.botToken?.() ?? DEV_TOKEN;
    const comment = await gateway(own(forgeCase.comment), capability, {
      method: 'POST',
      body: JSON.stringify({ body: `my token ${real}` }),
    });
    expect(comment.status).toBe(201);
    expect(await comment.text()).not.toContain(real);

    expect((await gateway(forgeCase.repo('acme/secret'), capability)).status).toBe(403);
    expect((await gateway(forgeCase.repo(forge.otherId), capability)).status).toBe(403);
    const elsewhere = await gateway(`${forgeCase.repo('acme/secret')}${forgeCase.comment}`, capability, {
      method: 'POST',
      body: '{"body":"x"}',
    });
    expect(elsewhere.status).toBe(403);
    const graphql = await gateway(forgeCase.graphql, capability, { method: 'POST', body: '{"query":"{ viewer { login } }"}' });
    expect(graphql.status).toBe(403);
    expect(await graphql.text()).toContain('GraphQL API is not served');
    // The bot's token is no capability, and a made-up capability is none either.
    expect((await gateway(own(), DEV_TOKEN)).status).toBe(401);
    expect((await gateway(own(), `bgw_${id}_${'x'.repeat(43)}`)).status).toBe(401);

    for (const [method, rest, body] of forgeCase.refused) {
      const res = await gateway(own(rest), capability, { method, body: body === undefined ? undefined : JSON.stringify(body) });
      expect(res.status, `${method} ${rest}`).toBe(403);
    }
    const release = await gateway(own(forgeCase.release.path), capability, {
      method: 'POST',
      body: JSON.stringify(forgeCase.release.body),
    });
    expect(release.status).toBe(403);
    const log = await logOf(id);
    expect(log).toContainEqual(`[gateway] refused: ${forgeCase.release.reason}`);
    expect(log).toContainEqual(expect.stringMatching(/is outside this run's repository acme\/app$/));
    expect(log).toContainEqual(expect.stringMatching(/names a repository by an id that is not acme\/app's$/));
  });

  it('points the forge’s pagination links back at the gateway, so a next page is asked there too', async () => {
    const { capability } = await startRun();
    const first = await gateway(own('/labels?per_page=1'), capability);
    expect(first.status).toBe(200);
    const next = /<([^>]+)>; rel="next"/.exec(first.headers.get('link') ?? '')?.[1];
    expect(next?.startsWith(`/gateway${forgeCase.repo('acme/app')}/labels?`), next).toBe(true);
    expect(first.headers.get('link')).not.toContain(forge.url);
    const second = await fetch(new URL(next!, server.url), { headers: forgeCase.auth(capability) });
    expect(second.status).toBe(200);
    expect(((await second.json()) as { name: string }[]).map((l) => l.name)).toEqual(['docs']);
  });

  it('takes real git through it: a clone of the private repository, its own branch pushed, the default and a protected branch refused in git’s words', async () => {
    const { capability } = await startRun();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-gateway-forges-git-'));
    try {
      // As the runner sends it (the capability as Gitea's user name; the gateway reads either place).
      const header = `http.extraHeader=Authorization: Basic ${Buffer.from(`${capability}:x-oauth-basic`).toString('base64')}`;
      const git = (...args: string[]) =>
        new Promise<{ status: number | null; stderr: string }>((resolve) => {
          const child = spawn('git', ['-c', header, '-c', 'user.name=t', '-c', 'user.email=t@example.invalid', ...args], {
            cwd: dir,
            env: { ...process.env, GIT_TERMINAL_PROMPT: '0' },
          });
          let stderr = '';
          child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
          child.on('close', (status) => resolve({ status, stderr }));
        });
      const cloned = await git('clone', '-q', `${server.url}/gateway/acme/app.git`, 'work');
      expect(cloned.status, cloned.stderr).toBe(0);
      fs.writeFileSync(path.join(dir, 'work', 'x.txt'), 'x\n');
      const inWork = (...args: string[]) => git('-C', 'work', ...args);
      await inWork('add', 'x.txt');
      expect((await inWork('commit', '-q', '-m', 'x')).status).toBe(0);
      const ownBranch = await inWork('push', 'origin', 'HEAD:refs/heads/feature/issue-1-x');
      expect(ownBranch.status, ownBranch.stderr).toBe(0);
      const log = (ref: string) =>
        spawnSync('git', ['--git-dir', forge.bare, 'log', '-1', '--format=%s', ref], { encoding: 'utf8' }).stdout.trim();
      expect(log('feature/issue-1-x')).toBe('x');
      const main = await inWork('push', 'origin', 'HEAD:refs/heads/main');
      expect(main.stderr).toContain(
        "[remote rejected] HEAD -> main (baton's forge gateway refused this: a push to the default branch main)",
      );
      expect(log('main')).not.toBe('x');
      const other = await inWork('push', 'origin', 'HEAD:refs/heads/feature/issue-2-other');
      expect(other.stderr).toContain('the develop stage may push only a branch naming issue #1');
      // A branch the stage's rules name, but the forge protects: refused too.
      spawnSync('git', ['--git-dir', forge.bare, 'branch', 'feature/issue-1-guarded', 'main']);
      forge.protect('feature/issue-1-guarded');
      const guarded = await inWork('push', '-f', 'origin', 'HEAD:refs/heads/feature/issue-1-guarded');
      expect(guarded.stderr).toContain('a push to the protected branch feature/issue-1-guarded');
      expect(log('feature/issue-1-guarded')).not.toBe('x');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('lets the review account only comment, review and label, and refuses the capability once the run has ended', async () => {
    const { id, capability } = await startRun('review');
    expect((await gateway(own(forgeCase.comment), capability, { method: 'POST', body: '{"body":"lgtm"}' })).status).toBe(201);
    const [method, rest, body] = forgeCase.edit;
    expect((await gateway(own(rest), capability, { method, body: JSON.stringify(body) })).status).toBe(403);
    // A label goes through; the same edit with anything beside the labels does not.
    const [labelMethod, labelRest, labelBody] = forgeCase.label;
    expect((await gateway(own(labelRest), capability, { method: labelMethod, body: JSON.stringify(labelBody) })).status).toBe(200);
    const mixed = { ...(labelBody as object), ...(body as object) };
    expect((await gateway(own(rest), capability, { method, body: JSON.stringify(mixed) })).status).toBe(403);
    const refs = await fetch(`${server.url}/gateway/acme/app.git/info/refs?service=git-receive-pack`, {
      headers: { authorization: `Basic ${Buffer.from(`x-access-token:${capability}`).toString('base64')}` },
    });
    expect(refs.status).toBe(403);
    expect(await refs.text()).toContain('the review account may not push');
    await server.app.engine.cancel(id);
    expect((await gateway(own(), capability)).status).toBe(401);
  });

  if (forgeCase.name === 'GitHub App')
    it("acts as the App with a token minted for the run's repository alone, and mints a new one after GitHub refuses it", async () => {
      const github = forge.github!;
      const { capability } = await startRun();
      const post = (text: string) => gateway(own(forgeCase.comment), capability, { method: 'POST', body: JSON.stringify({ body: text }) });
      expect((await post('as the App')).status).toBe(201);
      expect(github.comments('acme', 'app', 1).find((c) => c.body === 'as the App')?.author).toBe('baton-ci[bot]');
      // Installed on acme/secret too, but every token (the run's, the status comments') reaches acme/app only.
      const minted = github.mintedTokens();
      expect(minted.length).toBeGreaterThan(0);
      for (const token of minted) expect(token).toEqual({ repos: ['acme/app'], repositoriesAsked: ['app'] });
      // Revoked at GitHub: that request is refused (401), the next one gets a new token.
      for (const [token, record] of github.state.installationTokens) if (record.repos.has('acme/app')) github.state.tokens.delete(token);
      expect((await post('with the revoked token')).status).toBe(401);
      expect((await post('with a new token')).status).toBe(201);
      expect(github.mintedTokens().length).toBeGreaterThan(minted.length);
    });
});

describe('forge gateway on GitLab: "Request changes" (the reviewer state) by the review account, on its own merge request only', () => {
  let gitlab: FakeGitLab;
  let t: TestStore;
  let server: TestApp;
  let provider: MemoryProvider;

  beforeEach(async () => {
    gitlab = await createFakeGitLab();
    gitlab.addUser('claude-dev', { token: DEV_TOKEN });
    gitlab.addUser('claude-review', { token: REVIEW_TOKEN });
    gitlab.addProject('acme', 'app');
    for (const user of ['claude-dev', 'claude-review']) gitlab.setAccess('acme', 'app', user, 30);
    gitlab.addIssue('acme', 'app', { title: 'fix it', author: 'claude-dev' });
    for (const [n, source] of [
      [1, 'feature/issue-1-fix'],
      [2, 'feature/issue-2-other'],
    ] as const) {
      gitlab.addMergeRequest('acme', 'app', { title: `mr ${n}`, author: 'claude-dev', source, target: 'main' });
      gitlab.addReviewer('acme', 'app', n, 'claude-review');
    }
    t = await createSqliteTestStore();
    provider = createMemoryProvider();
    const env = { GITLAB_URL: gitlab.url, GITLAB_DEV_TOKEN: DEV_TOKEN, GITLAB_REVIEW_TOKEN: REVIEW_TOKEN, GITLAB_WEBHOOK_SECRET: 'x' };
    server = await startTestApp(t, { env, deps: { provider } });
  });
  afterEach(async () => {
    await server?.close();
    await t?.cleanup();
    await gitlab?.close();
  });

  async function startRun(stage: string, account: 'dev' | 'review', isPull: boolean) {
    const { run } = await server.app.engine.enqueue({
      stage,
      forge: 'gitlab',
      owner: 'acme',
      repo: 'app',
      number: 1,
      ...(isPull ? { mergeRequest: true } : {}),
      payload: { forge: 'gitlab', account, ...(isPull ? { isPull: true } : {}) },
    });
    await until(async () => (await server.app.runs.get(run.id))?.status === 'running', 'the run to be running');
    return { id: run.id, capability: provider.created.find((s) => s.runId === run.id)!.forgeToken! };
  }
  const requestChanges = (capability: string, iid: number) =>
    fetch(`${server.url}/gateway/api/v4/projects/acme%2Fapp/merge_requests/${iid}/draft_notes/bulk_publish`, {
      method: 'POST',
      headers: { 'private-token': capability, 'content-type': 'application/json' },
      body: '{"reviewer_state":"requested_changes"}',
    });
  const stateOn = (iid: number) => gitlab.reviewers('acme', 'app', iid).find((r) => r.username === 'claude-review')?.state;

  it('passes the review account’s on the run’s merge request, and refuses it on another one', async () => {
    const { id, capability } = await startRun('review-code', 'review', true);
    expect((await requestChanges(capability, 1)).status).toBe(204);
    expect(stateOn(1)).toBe('requested_changes');
    const other = await requestChanges(capability, 2);
    expect(other.status).toBe(403);
    expect(stateOn(2)).toBe('unreviewed');
    const log = (await server.app.runs.events(id)).flatMap((e) => (e.type === 'run:progress' ? ((e.data?.lines as string[]) ?? []) : []));
    expect(log).toContainEqual('[gateway] refused: a reviewer state on !2: this run may request changes on its own merge request !1 only');
    // Publishing without a state is a review's line comments, which any merge request of the project may get.
    const drafts = await fetch(`${server.url}/gateway/api/v4/projects/acme%2Fapp/merge_requests/2/draft_notes/bulk_publish`, {
      method: 'POST',
      headers: { 'private-token': capability },
    });
    expect(drafts.status).toBe(204);
  });

  it('passes a run on an issue only for a merge request whose source branch names the issue', async () => {
    const { capability } = await startRun('test', 'review', false);
    expect((await requestChanges(capability, 2)).status).toBe(403);
    expect((await requestChanges(capability, 1)).status).toBe(204);
    expect(stateOn(1)).toBe('requested_changes');
  });

  it('refuses a note with a quick action (GitLab would run it as the bot: /merge past the merge right), either account', async () => {
    const { id, capability } = await startRun('rework-pr', 'dev', true);
    const note = (body: string) =>
      fetch(`${server.url}/gateway/api/v4/projects/acme%2Fapp/merge_requests/1/notes`, {
        method: 'POST',
        headers: { 'private-token': capability, 'content-type': 'application/json' },
        body: JSON.stringify({ body }),
      });
    const refused = ['Reworked.\n/merge', '/approve', '/request_changes', '/submit_review requested_changes'];
    for (const body of refused) expect((await note(body)).status, body).toBe(403);
    // None reached GitLab (baton's own status notes on !1 may have).
    expect(gitlab.notes('acme', 'app', 1, 'pull').filter((n) => refused.includes(n.body))).toEqual([]);
    expect((await note('Reworked: see /tmp/x.md and `/merge` (not a command).')).status).toBe(201);
    const log = (await server.app.runs.events(id)).flatMap((e) => (e.type === 'run:progress' ? ((e.data?.lines as string[]) ?? []) : []));
    expect(log).toContainEqual(
      expect.stringMatching(/^\[gateway\] refused: a body with a line starting "\/merge", which GitLab runs as a quick action/),
    );
  });

  it('refuses it to the dev account, on any merge request', async () => {
    gitlab.addReviewer('acme', 'app', 1, 'claude-dev');
    const { capability } = await startRun('rework-pr', 'dev', true);
    const res = await requestChanges(capability, 1);
    expect(res.status).toBe(403);
    expect(await res.text()).toContain('the dev account may not');
    expect(gitlab.reviewers('acme', 'app', 1).map((r) => r.state)).toEqual(['unreviewed', 'unreviewed']);
  });
});
