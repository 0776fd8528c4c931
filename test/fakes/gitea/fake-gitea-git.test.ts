import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { git } from '../agent/git-repos.js';
import { createFakeGitea, type FakeGitea } from './index.js';

const run = promisify(execFile);
const GIT_ENV = { PATH: process.env.PATH, GIT_CONFIG_NOSYSTEM: '1', GIT_TERMINAL_PROMPT: '0', HOME: os.tmpdir() };

/** `git <args>` with `config` as `-c` pairs; resolves to the exit code and stderr, never throws. */
async function gitRun(cwd: string, args: string[], config: Record<string, string> = {}) {
  const flags = Object.entries(config).flatMap(([k, v]) => ['-c', `${k}=${v}`]);
  try {
    await run('git', [...flags, ...args], { cwd, env: GIT_ENV });
    return { code: 0, stderr: '' };
  } catch (err) {
    const e = err as { code?: number; stderr?: string };
    return { code: e.code ?? 1, stderr: e.stderr ?? '' };
  }
}

/** Git's smart HTTP on the fake Gitea, with the answers of routers/web/repo/githttp.go `httpBase`. */
describe('fake Gitea git smart HTTP', () => {
  let gitea: FakeGitea;
  let dev: string;
  let reader: string;
  let dir: string;
  const basic = (user: string, password: string) => `Authorization: Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

  beforeEach(async () => {
    gitea = await createFakeGitea();
    dev = gitea.addUser('claude-dev').token;
    reader = gitea.addUser('reader').token;
    gitea.addUser('stranger');
    gitea.addRepo('acme', 'app', { private: true, git: { main: { 'src/a.txt': 'a\n' } } });
    gitea.addCollaborator('acme', 'app', 'claude-dev', 'write');
    gitea.addCollaborator('acme', 'app', 'reader', 'read');
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fake-gitea-git-test-'));
  });
  afterEach(async () => {
    await gitea.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it.each([
    ['Basic TOKEN:x-oauth-basic', (t: string) => basic(t, 'x-oauth-basic')],
    ['Basic TOKEN: (empty password)', (t: string) => basic(t, '')],
    ['Basic user:TOKEN', (t: string) => basic('claude-dev', t)],
    ['Authorization: token TOKEN', (t: string) => `Authorization: token ${t}`],
    ['Authorization: Bearer TOKEN', (t: string) => `Authorization: Bearer ${t}`],
  ])('clones a private repository with %s, pushes a branch, and the branch API sees it', async (_name, header) => {
    const auth = { 'http.extraHeader': header(dev) };
    const clone = await gitRun(dir, ['clone', '--quiet', `${gitea.url}/acme/app.git`, 'work'], auth);
    expect(clone, clone.stderr).toMatchObject({ code: 0 });
    const work = path.join(dir, 'work');
    expect(fs.readFileSync(path.join(work, 'src/a.txt'), 'utf8')).toBe('a\n');
    git(work, 'checkout', '--quiet', '-b', 'feature/issue-1-x');
    fs.writeFileSync(path.join(work, 'b.txt'), 'b\n');
    git(work, 'add', '-A');
    git(work, '-c', 'user.name=T', '-c', 'user.email=t@example.invalid', 'commit', '--quiet', '-m', 'b');
    const push = await gitRun(work, ['push', '--quiet', 'origin', 'HEAD'], auth);
    expect(push, push.stderr).toMatchObject({ code: 0 });
    expect(git(gitea.gitDir('acme', 'app'), 'rev-parse', 'refs/heads/feature/issue-1-x')).toBe(git(work, 'rev-parse', 'HEAD'));

    const branch = await fetch(`${gitea.url}/api/v1/repos/acme/app/branches/feature/issue-1-x`, {
      headers: { authorization: `token ${dev}` },
    });
    expect(branch.status).toBe(200);
    expect(await branch.json()).toMatchObject({
      name: 'feature/issue-1-x',
      commit: { id: git(work, 'rev-parse', 'HEAD') },
      protected: false,
    });
  });

  it('asks for sign-in like Gitea: 401 with Basic realm="Gitea" without a token, also for a missing repository', async () => {
    for (const repo of ['acme/app', 'acme/missing']) {
      const res = await fetch(`${gitea.url}/${repo}.git/info/refs?service=git-upload-pack`);
      expect(res.status, repo).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Basic realm="Gitea"');
    }
    const wrong = await fetch(`${gitea.url}/acme/app.git/info/refs?service=git-upload-pack`, { headers: { authorization: 'token nope' } });
    expect(wrong.status).toBe(401);
  });

  it('answers 404 "Repository not found" to a user who may not read, or may not write for a push', async () => {
    const stranger = gitea.addToken('stranger');
    const refs = (token: string, service: string) =>
      fetch(`${gitea.url}/acme/app/info/refs?service=${service}`, { headers: { authorization: `token ${token}` } });
    const hidden = await refs(stranger, 'git-upload-pack');
    expect([hidden.status, await hidden.text()]).toEqual([404, 'Repository not found']);
    expect((await refs(reader, 'git-upload-pack')).status).toBe(200);
    expect((await refs(reader, 'git-receive-pack')).status).toBe(404);
    const ok = await refs(dev, 'git-receive-pack');
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-type')).toBe('application/x-git-receive-pack-advertisement');
    expect(
      (await fetch(`${gitea.url}/acme/nope.git/info/refs?service=git-upload-pack`, { headers: { authorization: `token ${dev}` } })).status,
    ).toBe(404);
  });

  it('refuses unknown services (400), a request body of the wrong type (400), and pushes to an archived repository (403)', async () => {
    const auth = { authorization: `token ${dev}` };
    expect((await fetch(`${gitea.url}/acme/app.git/info/refs?service=git-frobnicate`, { headers: auth })).status).toBe(400);
    expect((await fetch(`${gitea.url}/acme/app.git/git-upload-pack`, { method: 'POST', headers: auth, body: '0000' })).status).toBe(400);
    gitea.setArchived('acme', 'app', true);
    const archived = await fetch(`${gitea.url}/acme/app.git/info/refs?service=git-receive-pack`, { headers: auth });
    expect(archived.status).toBe(403);
    expect(await archived.text()).toContain('This repo is archived');
  });

  it('lets anyone clone a public repository without a token', async () => {
    gitea.addRepo('acme', 'open', { git: true });
    const clone = await gitRun(dir, ['clone', '--quiet', `${gitea.url}/acme/open.git`, 'open']);
    expect(clone, clone.stderr).toMatchObject({ code: 0 });
    expect(fs.existsSync(path.join(dir, 'open', 'README.md'))).toBe(true);
  });

  it('reports branch protection by name or glob, and 404 for a branch that does not exist', async () => {
    gitea.addRepo('acme', 'lib', { git: { develop: {} }, defaultBranch: 'develop' });
    gitea.addCollaborator('acme', 'lib', 'claude-dev', 'write');
    gitea.protectBranch('acme', 'lib', 'release/*');
    gitea.protectBranch('acme', 'lib', 'main');
    const branch = (name: string) =>
      fetch(`${gitea.url}/api/v1/repos/acme/lib/branches/${name}`, { headers: { authorization: `token ${dev}` } });
    expect(await (await branch('main')).json()).toMatchObject({
      protected: true,
      user_can_push: false,
      effective_branch_protection_name: 'main',
    });
    expect(await (await branch('develop')).json()).toMatchObject({ protected: false, user_can_push: true });
    expect((await branch('nope')).status).toBe(404);
    // The default branch the repository API reports is the one the bare repository's HEAD names.
    expect(git(gitea.gitDir('acme', 'lib'), 'symbolic-ref', 'HEAD')).toBe('refs/heads/develop');
  });

  it('opens a pull request from a pushed branch as CreatePullRequest does: 201, then 409 for the same targets; 422 and 404 otherwise', async () => {
    const work = path.join(dir, 'work');
    const auth = { 'http.extraHeader': `Authorization: token ${dev}` };
    expect((await gitRun(dir, ['clone', '--quiet', `${gitea.url}/acme/app.git`, 'work'], auth)).code).toBe(0);
    git(work, 'checkout', '--quiet', '-b', 'feature/issue-1-x');
    fs.writeFileSync(path.join(work, 'b.txt'), 'b\n');
    git(work, 'add', '-A');
    git(work, '-c', 'user.name=T', '-c', 'user.email=t@example.invalid', 'commit', '--quiet', '-m', 'b');
    expect((await gitRun(work, ['push', '--quiet', 'origin', 'HEAD'], auth)).code).toBe(0);
    const create = (body: object) =>
      fetch(`${gitea.url}/api/v1/repos/acme/app/pulls`, {
        method: 'POST',
        headers: { authorization: `token ${dev}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const opened = await create({ head: 'feature/issue-1-x', base: 'main', title: 'Fix #1', body: 'Closes #1' });
    expect(opened.status).toBe(201);
    expect(await opened.json()).toMatchObject({
      title: 'Fix #1',
      state: 'open',
      user: { login: 'claude-dev' },
      head: { ref: 'feature/issue-1-x', sha: git(work, 'rev-parse', 'HEAD') },
      base: { ref: 'main' },
    });
    expect((await create({ head: 'feature/issue-1-x', base: 'main', title: 'again' })).status).toBe(409);
    expect((await create({ head: 'main', base: 'main', title: 'same' })).status).toBe(422);
    expect((await create({ head: 'no-such-branch', base: 'main', title: 'missing' })).status).toBe(404);
    const listed = (await (
      await fetch(`${gitea.url}/api/v1/repos/acme/app/pulls`, { headers: { authorization: `token ${dev}` } })
    ).json()) as unknown[];
    expect(listed).toHaveLength(1);
  });
});
