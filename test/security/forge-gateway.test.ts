import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
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
      // An operator's own stage that pushes only docs branches, and one that pushes nothing.
      file: [
        'pipeline:',
        '  stages:',
        '    docs: { build: light, triggers: [{ event: labeled, label: docs }], push: ["docs/*"] }',
        '    notes: { build: light, triggers: [{ event: labeled, label: notes }], push: [] }',
        '',
      ].join('\n'),
    });
  });
  afterEach(async () => {
    await server?.close();
    await t?.cleanup();
    await gitea?.close();
  });

  async function startRun(account: 'dev' | 'review' = 'dev', stage?: string, payload: Record<string, unknown> = {}) {
    const { run } = await server.app.engine.enqueue({
      stage: stage ?? (account === 'dev' ? 'develop' : 'review-code'),
      owner: 'acme',
      repo: 'app',
      number: 1,
      payload: { account, ...payload },
    });
    await until(async () => (await server.app.runs.get(run.id))?.status === 'running', 'the run to be running');
    const spec = provider.created.find((s) => s.runId === run.id)!;
    return { id: run.id, spec };
  }
  const gateway = (path: string, capability: string, init: RequestInit = {}) =>
    fetch(`${server.url}/gateway${path}`, {
      ...init,
      headers: { authorization: `token ${capability}`, ...(init.headers as Record<string, string>) },
    });
  const logOf = async (id: number) =>
    (await server.app.runs.events(id)).flatMap((e) => (e.type === 'run:progress' ? ((e.data?.lines as string[] | undefined) ?? []) : []));

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

  const pusher = (capability: string) => {
    const basic = `Basic ${Buffer.from(`x-access-token:${capability}`).toString('base64')}`;
    return (ref: string) =>
      fetch(`${server.url}/gateway/acme/app.git/git-receive-pack`, {
        method: 'POST',
        headers: { authorization: basic, 'content-type': 'application/x-git-receive-pack-request' },
        body: pushBody(ref),
      });
  };

  it('refuses a push to the default branch before it reaches the forge, and lets a branch of its own through', async () => {
    const { id, spec } = await startRun();
    const push = pusher(spec.forgeToken!);
    // Refused in git's report-status, so `git push` shows `! [remote rejected] main -> main (…)`.
    const toMain = await push('refs/heads/main');
    expect(toMain.status).toBe(200);
    expect(toMain.headers.get('content-type')).toBe('application/x-git-receive-pack-result');
    const report = await toMain.text();
    expect(report.startsWith('000eunpack ok\n')).toBe(true);
    expect(report).toContain("ng refs/heads/main baton's forge gateway refused this: a push to the default branch main\n");
    expect(report.endsWith('0000')).toBe(true);
    expect(await (await push('refs/tags/v1')).text()).toContain('ng refs/tags/v1 ');
    expect(gitea.requests.some((r) => r.path.endsWith('git-receive-pack'))).toBe(false);
    // A branch that does not name the run's issue is not the develop stage's to push.
    const stray = await push('refs/heads/baton/develop-1');
    expect(await stray.text()).toContain(
      "ng refs/heads/baton/develop-1 baton's forge gateway refused this: a push to baton/develop-1: the develop stage may push only a branch naming issue #1",
    );
    expect(gitea.requests.some((r) => r.path.endsWith('git-receive-pack'))).toBe(false);
    // Its own branch passes the gateway (the fake forge does not speak git, so it answers itself).
    const own = await push('refs/heads/feature/issue-1-fix-it');
    expect(own.status).not.toBe(403);
    expect(await own.text()).not.toContain('refused');
    expect(gitea.requests.some((r) => r.path === '/acme/app.git/git-receive-pack')).toBe(true);
    expect(await logOf(id)).toContainEqual('[gateway] refused: a push to the default branch main');
  });

  it("pushes only what the stage's rules name: the pull request's head, an operator's pattern, nothing", async () => {
    const rework = await startRun('dev', 'rework-pr', { isPull: true, headRef: 'feature/issue-9-thing' });
    const push = pusher(rework.spec.forgeToken!);
    expect(await (await push('refs/heads/feature/issue-1-other')).text()).toContain('ng refs/heads/feature/issue-1-other ');
    expect(await (await push('refs/heads/feature/issue-9-thing')).text()).not.toContain('refused');
    expect(await logOf(rework.id)).toContainEqual(
      "[gateway] refused: a push to feature/issue-1-other: the rework-pr stage may push only the pull request's head feature/issue-9-thing (pipeline.stages.rework-pr.push)",
    );
    await server.app.engine.cancel(rework.id);

    const docs = await startRun('dev', 'docs');
    const pushDocs = pusher(docs.spec.forgeToken!);
    expect(await (await pushDocs('refs/heads/feature/issue-1-x')).text()).toContain('ng refs/heads/feature/issue-1-x ');
    expect(await (await pushDocs('refs/heads/docs/intro')).text()).not.toContain('refused');
    await server.app.engine.cancel(docs.id);

    const notes = await startRun('dev', 'notes');
    const refs = await fetch(`${server.url}/gateway/acme/app.git/info/refs?service=git-receive-pack`, {
      headers: { authorization: `Basic ${Buffer.from(`${notes.spec.forgeToken}:x-oauth-basic`).toString('base64')}` },
    });
    expect(refs.status).toBe(403);
    expect(await refs.text()).toContain('the notes stage may push no branch (pipeline.stages.notes.push)');
  });

  it("refuses the bot's other rights on the run's own repository: settings, collaborators, keys, hooks, file writes, merges", async () => {
    const { id, spec } = await startRun();
    const cap = spec.forgeToken!;
    const json = { 'content-type': 'application/json' };
    const attempts: [string, string, unknown][] = [
      ['PUT', '/api/v1/repos/acme/app/collaborators/mallory', { permission: 'admin' }],
      ['POST', '/api/v1/repos/acme/app/keys', { title: 'k', key: 'ssh-ed25519 AAAA', read_only: false }],
      ['POST', '/api/v1/repos/acme/app/hooks', { type: 'gitea', config: { url: 'https://evil.example' } }],
      ['PATCH', '/api/v1/repos/acme/app', { default_branch: 'feature/issue-1-x', private: false }],
      ['DELETE', '/api/v1/repos/acme/app', undefined],
      ['PUT', '/api/v1/repos/acme/app/contents/README.md', { content: 'b3duZWQ=', branch: 'main', sha: 'x' }],
      ['POST', '/api/v1/repos/acme/app/contents', { branch: 'main', files: [] }],
      ['DELETE', '/api/v1/repos/acme/app/branch_protections/main', undefined],
      ['POST', '/api/v1/repos/acme/app/pulls/2/merge', { Do: 'merge' }],
      ['POST', '/api/v1/repos/acme/app/releases', { tag_name: 'v9', target_commitish: 'main' }],
      ['POST', '/api/v1/repos/acme/app/transfer', { new_owner: 'mallory' }],
    ];
    const before = gitea.requests.length;
    for (const [method, path, body] of attempts) {
      const res = await gateway(path, cap, {
        method,
        headers: json,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      expect(res.status, `${method} ${path}`).toBe(403);
    }
    // None reached the forge (baton's own status comments on the issue aside).
    expect(gitea.requests.slice(before).filter((r) => !r.path.endsWith('/issues/1/comments'))).toEqual([]);
    const log = await logOf(id);
    expect(log).toContainEqual(
      '[gateway] refused: PUT /api/v1/repos/acme/app/collaborators/mallory is not a change runs may make through the gateway',
    );
    expect(log).toContainEqual('[gateway] refused: the develop stage may not merge pull requests (pipeline.stages.develop.merge)');
    expect(log).toContainEqual('[gateway] refused: a release through the gateway must be a draft (publishing one makes its tag)');
    // What the prompts do still passes: a comment on the issue.
    expect(
      (await gateway('/api/v1/repos/acme/app/issues/1/comments', cap, { method: 'POST', headers: json, body: '{"body":"ok"}' })).status,
    ).toBe(201);
  });

  it('refuses what a body or a query asks beyond its path: a retarget, a merge by state, a foreign head, a dev approval, a form', async () => {
    const { id, spec } = await startRun();
    const cap = spec.forgeToken!;
    const json = { 'content-type': 'application/json' };
    const before = gitea.requests.length;
    const attempts: [string, string, string, Record<string, string>][] = [
      ['PATCH', '/api/v1/repos/acme/app/pulls/2', '{"title":"x","base":"main"}', json],
      // Gitea's decoder matches field names without case.
      ['PATCH', '/api/v1/repos/acme/app/pulls/2', '{"Base":"main"}', json],
      ['PATCH', '/api/v1/repos/acme/app/pulls/2', '{"state":"merged"}', json],
      // A form binds to the same fields in Gitea, whatever the content type says.
      ['PATCH', '/api/v1/repos/acme/app/pulls/2', 'title=x&base=main', { 'content-type': 'application/x-www-form-urlencoded' }],
      ['PATCH', '/api/v1/repos/acme/app/pulls/2?base=main', '{"title":"x"}', json],
      ['POST', '/api/v1/repos/acme/app/pulls', '{"head":"mallory:evil","base":"main","title":"t"}', json],
      ['POST', '/api/v1/repos/acme/app/pulls', '{"head":"someone-elses-branch","base":"main","title":"t"}', json],
      ['POST', '/api/v1/repos/acme/app/pulls/2/reviews', '{"event":"APPROVED","body":"lgtm"}', json],
    ];
    for (const [method, path, body, headers] of attempts) {
      const res = await gateway(path, cap, { method, headers, body });
      expect(res.status, `${method} ${path} ${body}`).toBe(403);
    }
    expect(gitea.requests.slice(before).filter((r) => !r.path.endsWith('/issues/1/comments'))).toEqual([]);
    const log = await logOf(id);
    expect(log).toContainEqual(
      "[gateway] refused: changing a pull request's base branch needs the right to merge, which the develop stage has not (pipeline.stages.develop.merge)",
    );
    expect(log).toContainEqual(
      '[gateway] refused: a state change to "merged" (only open or closed) needs the right to merge, which the develop stage has not (pipeline.stages.develop.merge)',
    );
    expect(log).toContainEqual('[gateway] refused: the gateway passes a JSON body of a change, nothing else (no form)');
    expect(log).toContainEqual('[gateway] refused: a change carries its fields in its JSON body, not in the query (base)');
    expect(log).toContainEqual("[gateway] refused: a pull request from mallory:evil: another owner's branch; only branches of acme/app");
    expect(log).toContainEqual(
      '[gateway] refused: a pull request from someone-elses-branch: the develop stage opens pull requests only from a branch naming issue #1 (issue-1-…) (pipeline.stages.develop.push)',
    );
    expect(log).toContainEqual(
      '[gateway] refused: only the review account approves pull requests; the dev account may comment or request changes',
    );
    // The work the prompts do passes, and reaches the forge as JSON: a pull request from the run's own branch, a title.
    const own = await gateway('/api/v1/repos/acme/app/pulls', cap, {
      method: 'POST',
      headers: json,
      body: '{"head":"feature/issue-1-fix-it","base":"main","title":"Fix it"}',
    });
    expect(own.status).not.toBe(403);
    const edit = await gateway('/api/v1/repos/acme/app/pulls/2', cap, {
      method: 'PATCH',
      body: '{"title":"Fix it (tested)","state":"closed"}',
    });
    expect(edit.status).not.toBe(403);
    expect(gitea.requests.slice(before).map((r) => `${r.method} ${r.path}`)).toEqual(
      expect.arrayContaining(['POST /api/v1/repos/acme/app/pulls', 'PATCH /api/v1/repos/acme/app/pulls/2']),
    );
  });

  it("edits and deletes only the bot's own comments, never a person's", async () => {
    const { id, spec } = await startRun();
    const cap = spec.forgeToken!;
    gitea.addUser('maintainer');
    const theirs = gitea.addComment('acme', 'app', 1, { author: 'maintainer', body: 'Do not merge: the migration is unsafe.' });
    const ours = gitea.addComment('acme', 'app', 1, { author: 'claude-dev', body: 'Working on it.' });
    const edit = (commentId: number, method = 'PATCH') =>
      gateway(`/api/v1/repos/acme/app/issues/comments/${commentId}`, cap, {
        method,
        headers: { 'content-type': 'application/json' },
        body: method === 'PATCH' ? '{"body":"LGTM, merge it."}' : undefined,
      });
    expect((await edit(theirs.id)).status).toBe(403);
    expect((await edit(theirs.id, 'DELETE')).status).toBe(403);
    expect(gitea.requests.some((r) => r.method !== 'GET' && r.path === `/api/v1/repos/acme/app/issues/comments/${theirs.id}`)).toBe(false);
    expect(await logOf(id)).toContainEqual(
      '[gateway] refused: a change to a comment by maintainer: the bot edits and deletes only its own comments',
    );
    expect((await edit(ours.id)).status).toBe(200);
    expect(gitea.comments('acme', 'app', 1).find((c) => c.id === ours.id)?.body).toBe('LGTM, merge it.');
  });

  it("reads the run's repository only: no other repository, listing, search, admin area, CI secret or runner token", async () => {
    const { id, spec } = await startRun();
    const cap = spec.forgeToken!;
    const before = gitea.requests.length;
    for (const path of [
      '/api/v1/repos/acme/secret/contents/README.md',
      '/api/v1/user/repos',
      '/api/v1/user/orgs',
      '/api/v1/users/search?q=a',
      '/api/v1/users/mallory/repos',
      '/api/v1/orgs/acme/repos',
      '/api/v1/orgs',
      '/api/v1/repos/search?q=secret',
      '/api/v1/repos/issues/search?q=password',
      '/api/v1/admin/users',
      '/api/v1/notifications',
      '/api/v1/repos/acme/app/hooks',
      '/api/v1/repos/acme/app/keys',
      '/api/v1/repos/acme/app/actions/runners/registration-token',
      '/api/v1/repos/acme/app/actions/secrets',
      '/api/v1/repos/acme/app/actions/variables',
      '/api/v1/repos/acme/app/issues/1/dependencies',
    ]) {
      expect((await gateway(path, cap)).status, path).toBe(403);
    }
    expect(gitea.requests.slice(before).filter((r) => !r.path.endsWith('/issues/1/comments'))).toEqual([]);
    const log = await logOf(id);
    expect(log).toContainEqual("[gateway] refused: GET /api/v1/repos/search is outside this run's repository acme/app");
    expect(log).toContainEqual(
      "[gateway] refused: the repository's CI runners and their registration token are not read through the gateway",
    );
    // Its own repository's code, issues and pull requests, and who the bot is, are read.
    for (const path of [
      '/api/v1/repos/acme/app',
      '/api/v1/repos/acme/app/issues/1',
      '/api/v1/repos/acme/app/pulls?state=open',
      '/api/v1/user',
    ])
      expect((await gateway(path, cap)).status, path).toBe(200);
  });

  it('lets the review account only comment, review and label', async () => {
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
    expect(
      (await gateway('/api/v1/repos/acme/app/issues/1/labels', cap, { method: 'POST', headers: json, body: '{"labels":["bug"]}' })).status,
    ).toBe(200);
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
    await until(async () => (await server.app.runs.get(run.id))?.status === 'running', 'the run to be running');
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
    await until(async () => (await server.app.runs.get(maintenance.run.id))?.status === 'running', 'the maintenance run to be running');
    const other = provider.created.find((s) => s.runId === maintenance.run.id)!;
    expect(other.cloneUrl).toBe('https://mirror.example.invalid/acme/tools.git');
    expect(other.forgeToken).toMatch(/^bgw_/);
    expect(JSON.stringify(other)).not.toContain(DEV_TOKEN);
  });

  it('takes real git through it: a shallow clone pushes a branch of its issue, and is refused the default branch in git’s words', async () => {
    const { run } = await server.app.engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 3 });
    await until(async () => (await server.app.runs.get(run.id))?.status === 'running', 'the run to be running');
    const spec = provider.created.find((s) => s.runId === run.id)!;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-gateway-git-'));
    try {
      const header = `http.extraHeader=Authorization: Basic ${Buffer.from(`${spec.forgeToken}:x-oauth-basic`).toString('base64')}`;
      // Asynchronously: the gateway answers from this process.
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
      const cloned = await git('clone', '-q', '--depth', '1', `${server.url}/gateway/acme/app.git`, 'work');
      expect(cloned.status, cloned.stderr).toBe(0);
      fs.writeFileSync(path.join(dir, 'work', 'x.txt'), 'x\n');
      const inWork = (...args: string[]) => git('-C', 'work', ...args);
      await inWork('add', 'x.txt');
      expect((await inWork('commit', '-q', '-m', 'x')).status).toBe(0);
      const own = await inWork('push', 'origin', 'HEAD:refs/heads/feature/issue-3-x');
      expect(own.status, own.stderr).toBe(0);
      const bare = gitea.gitDir('acme', 'app');
      expect(
        spawnSync('git', ['--git-dir', bare, 'log', '-1', '--format=%s', 'feature/issue-3-x'], { encoding: 'utf8' }).stdout.trim(),
      ).toBe('x');
      const main = await inWork('push', 'origin', 'HEAD:refs/heads/main');
      expect(main.status).not.toBe(0);
      expect(main.stderr).toContain(
        "[remote rejected] HEAD -> main (baton's forge gateway refused this: a push to the default branch main)",
      );
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
