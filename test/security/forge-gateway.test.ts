import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createMemoryProvider, type MemoryProvider } from '../../src/workspaces/index.js';
import { createFakeGitea, type FakeGitea } from '../fakes/gitea/index.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createSqliteTestStore, type TestStore } from '../helpers/stores.js';
import { until } from '../helpers/until.js';

const DEV_TOKEN = 'dev-bot-real-token-0123456789';
const REVIEW_TOKEN = 'review-bot-real-token-0123456789';
const OID = 'a'.repeat(40);

/** A receive-pack request body with one ref update and an empty pack (gitprotocol-pack). */
function pushBody(ref: string): Buffer {
  const line = `${'0'.repeat(40)} ${OID} ${ref}\0report-status\n`;
  return Buffer.concat([Buffer.from((line.length + 4).toString(16).padStart(4, '0') + line), Buffer.from('0000PACK')]);
}

/**
 * The agent is untrusted: it never holds the bot's token. It gets a capability for its run that
 * baton's forge gateway accepts only while the run lives and only for the run's repository.
 */
describe('forge gateway: a credential worth nothing outside its run', () => {
  let gitea: FakeGitea;
  let t: TestStore;
  let server: TestApp;
  let provider: MemoryProvider;

  beforeEach(async () => {
    gitea = await createFakeGitea();
    gitea.addUser('claude-dev', { token: DEV_TOKEN });
    gitea.addUser('claude-review', { token: REVIEW_TOKEN });
    gitea.addRepo('acme', 'app', { defaultBranch: 'main' });
    gitea.addRepo('acme', 'secret');
    gitea.addCollaborator('acme', 'app', 'claude-dev', 'admin');
    gitea.addCollaborator('acme', 'secret', 'claude-dev', 'admin');
    gitea.addCollaborator('acme', 'app', 'claude-review', 'write');
    gitea.addIssue('acme', 'app', { title: 'fix it', author: 'claude-dev' });
    t = await createSqliteTestStore();
    provider = createMemoryProvider();
    server = await startTestApp(t, {
      env: { GITEA_URL: gitea.url, GITEA_DEV_TOKEN: DEV_TOKEN, GITEA_REVIEW_TOKEN: REVIEW_TOKEN },
      deps: { provider },
    });
  });
  afterEach(async () => {
    await server?.close();
    await t?.cleanup();
    await gitea?.close();
  });

  async function startRun(account: 'dev' | 'review' = 'dev') {
    const { run } = await server.app.engine.enqueue({
      stage: account === 'dev' ? 'develop' : 'review-code',
      owner: 'acme',
      repo: 'app',
      number: 1,
      payload: { account },
    });
    await until(async () => (await server.app.engine.get(run.id))?.status === 'running', 'the run to be running');
    const spec = provider.created.find((s) => s.runId === run.id)!;
    return { id: run.id, spec };
  }
  const gateway = (path: string, capability: string, init: RequestInit = {}) =>
    fetch(`${server.url}/gateway${path}`, {
      ...init,
      headers: { authorization: `token ${capability}`, ...(init.headers as Record<string, string>) },
    });
  const logOf = async (id: number) =>
    (await server.app.engine.events(id)).flatMap((e) => (e.type === 'run:progress' ? ((e.data?.lines as string[] | undefined) ?? []) : []));

  it('gives the workspace a capability and the gateway as its forge, never the bot token', async () => {
    const { spec } = await startRun();
    expect(spec.forgeToken).toMatch(/^bgw_\d+_[A-Za-z0-9_-]{43}$/);
    expect(JSON.stringify(spec)).not.toContain(DEV_TOKEN);
    expect(spec.forgeUrl).toMatch(/\/gateway$/);
    expect(spec.cloneUrl).toMatch(/\/gateway\/acme\/app\.git$/);
  });

  it("serves the run's repository with the bot's rights, and nothing else, and never shows the bot's token", async () => {
    const { id, spec } = await startRun();
    const cap = spec.forgeToken!;
    const repo = await gateway('/api/v1/repos/acme/app', cap);
    expect(repo.status).toBe(200);
    expect(((await repo.json()) as { full_name: string }).full_name).toBe('acme/app');
    const comment = await gateway('/api/v1/repos/acme/app/issues/1/comments', cap, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ body: `done; my token is ${DEV_TOKEN}` }),
    });
    expect(comment.status).toBe(201);
    const text = await comment.text();
    expect(text).not.toContain(DEV_TOKEN);
    // The forge saw the bot's token, not the capability.
    expect(gitea.comments('acme', 'app', 1).at(-1)?.author).toBe('claude-dev');

    // Another repository the bot can write to: refused, and said in the run's log.
    const other = await gateway('/api/v1/repos/acme/secret', cap);
    expect(other.status).toBe(403);
    expect(await gateway('/api/v1/repos/acme/secret/issues/1/comments', cap, { method: 'POST', body: '{}' })).toHaveProperty('status', 403);
    expect(await gateway('/api/v1/admin/users', cap)).toHaveProperty('status', 403);
    expect(await gateway('/api/v1/repos/acme/app', 'bgw_1_' + 'x'.repeat(43))).toHaveProperty('status', 401);
    expect(await gateway('/api/v1/repos/acme/app', DEV_TOKEN)).toHaveProperty('status', 401);
    expect(await logOf(id)).toContainEqual(
      expect.stringMatching(/^\[gateway\] refused: GET \/api\/v1\/repos\/acme\/secret is outside this run's repository acme\/app/),
    );
  });

  it('refuses a push to the default branch before it reaches the forge, and lets a branch of its own through', async () => {
    const { id, spec } = await startRun();
    const basic = `Basic ${Buffer.from(`x-access-token:${spec.forgeToken}`).toString('base64')}`;
    const push = (ref: string) =>
      fetch(`${server.url}/gateway/acme/app.git/git-receive-pack`, {
        method: 'POST',
        headers: { authorization: basic, 'content-type': 'application/x-git-receive-pack-request' },
        body: pushBody(ref),
      });
    const toMain = await push('refs/heads/main');
    expect(toMain.status).toBe(403);
    expect(await toMain.text()).toContain('a push to the default branch main');
    expect((await push('refs/tags/v1')).status).toBe(403);
    expect(gitea.requests.some((r) => r.path.endsWith('git-receive-pack'))).toBe(false);
    // Its own branch passes the gateway (the fake forge does not speak git, so it answers itself).
    const own = await push('refs/heads/baton/develop-1');
    expect(own.status).not.toBe(403);
    expect(gitea.requests.some((r) => r.path === '/acme/app.git/git-receive-pack')).toBe(true);
    expect(await logOf(id)).toContainEqual('[gateway] refused: a push to the default branch main');
  });

  it('lets the review account only comment and review', async () => {
    const { spec } = await startRun('review');
    const cap = spec.forgeToken!;
    const json = { 'content-type': 'application/json' };
    expect(
      (await gateway('/api/v1/repos/acme/app/issues/1/comments', cap, { method: 'POST', headers: json, body: '{"body":"lgtm"}' })).status,
    ).toBe(201);
    expect(
      (await gateway('/api/v1/repos/acme/app/labels', cap, { method: 'POST', headers: json, body: '{"name":"x","color":"ffffff"}' }))
        .status,
    ).toBe(403);
    expect(
      (await gateway('/api/v1/repos/acme/app/issues/1', cap, { method: 'PATCH', headers: json, body: '{"state":"closed"}' })).status,
    ).toBe(403);
  });

  it('refuses the capability once the run has ended', async () => {
    const { id, spec } = await startRun();
    expect((await gateway('/api/v1/repos/acme/app', spec.forgeToken!)).status).toBe(200);
    await server.app.engine.cancel(id);
    expect((await gateway('/api/v1/repos/acme/app', spec.forgeToken!)).status).toBe(401);
  });
});

/** GITEA_CLONE_URL (the forge's git at another address) goes through the gateway too; other clone sources get no token. */
describe('forge gateway: where git goes', () => {
  let gitea: FakeGitea;
  let t: TestStore;
  let server: TestApp;
  let provider: MemoryProvider;

  beforeEach(async () => {
    gitea = await createFakeGitea();
    gitea.addUser('claude-dev', { token: DEV_TOKEN });
    gitea.addRepo('acme', 'app', { private: true, git: true });
    gitea.addRepo('acme', 'tools');
    gitea.addCollaborator('acme', 'app', 'claude-dev', 'admin');
    gitea.addCollaborator('acme', 'tools', 'claude-dev', 'admin');
    t = await createSqliteTestStore();
    provider = createMemoryProvider();
    server = await startTestApp(t, {
      env: {
        GITEA_URL: gitea.url,
        // The same fake, by another name: what an operator sets when baton reaches the forge's git elsewhere.
        GITEA_CLONE_URL: gitea.url.replace('127.0.0.1', 'localhost'),
        GITEA_DEV_TOKEN: DEV_TOKEN,
        GITEA_REVIEW_TOKEN: REVIEW_TOKEN,
        MAINTENANCE_REPOS: 'acme/tools=https://mirror.example.invalid/acme/tools.git',
      },
      deps: { provider },
    });
  });
  afterEach(async () => {
    await server?.close();
    await t?.cleanup();
    await gitea?.close();
  });

  it('clones from GITEA_CLONE_URL through the gateway, and gives a clone source elsewhere no bot token', async () => {
    const { run } = await server.app.engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 1 });
    await until(async () => (await server.app.engine.get(run.id))?.status === 'running', 'the run to be running');
    const spec = provider.created.find((s) => s.runId === run.id)!;
    expect(spec.cloneUrl).toMatch(/\/gateway\/acme\/app\.git$/);
    const refs = await fetch(`${server.url}/gateway/acme/app.git/info/refs?service=git-upload-pack`, {
      headers: { authorization: `Basic ${Buffer.from(`${spec.forgeToken}:x-oauth-basic`).toString('base64')}` },
    });
    expect(refs.status).toBe(200);
    expect(refs.headers.get('content-type')).toBe('application/x-git-upload-pack-advertisement');
    expect(Buffer.from(await refs.arrayBuffer()).toString('latin1')).toContain('# service=git-upload-pack');
    expect(gitea.requests).toContainEqual(expect.objectContaining({ path: '/acme/app.git/info/refs', auth: 'basic', status: 200 }));

    const maintenance = await server.app.engine.enqueue({ stage: 'maintenance', owner: 'acme', repo: 'tools' });
    await until(async () => (await server.app.engine.get(maintenance.run.id))?.status === 'running', 'the maintenance run to be running');
    const other = provider.created.find((s) => s.runId === maintenance.run.id)!;
    expect(other.cloneUrl).toBe('https://mirror.example.invalid/acme/tools.git');
    expect(other.forgeToken).toMatch(/^bgw_/);
    expect(JSON.stringify(other)).not.toContain(DEV_TOKEN);
  });
});
