import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { git } from '../agent/git-repos.js';
import { createFakeGitHub, type FakeGitHub } from './index.js';

const run = promisify(execFile);
const GIT_ENV = { PATH: process.env.PATH, GIT_CONFIG_NOSYSTEM: '1', GIT_TERMINAL_PROMPT: '0', HOME: os.tmpdir() };
const basic = (user: string, password: string) => `Authorization: Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

/** `git <args>` with an extra header; resolves to the exit code and stderr, never throws. */
async function gitRun(cwd: string, args: string[], header?: string) {
  const flags = header ? ['-c', `http.extraHeader=${header}`] : [];
  try {
    await run('git', [...flags, ...args], { cwd, env: GIT_ENV });
    return { code: 0, stderr: '' };
  } catch (err) {
    const e = err as { code?: number; stderr?: string };
    return { code: e.code ?? 1, stderr: e.stderr ?? '' };
  }
}

/** Git's smart HTTP on the fake GitHub, with GitHub's authentication (repository.ts has the sources). */
describe('fake GitHub git smart HTTP and the endpoints over it', () => {
  let github: FakeGitHub;
  let dev: string;
  let reader: string;
  let dir: string;

  beforeEach(async () => {
    github = await createFakeGitHub();
    dev = github.addUser('claude-dev').token;
    reader = github.addUser('reader').token;
    github.addUser('acme');
    github.addRepo('acme', 'app', { private: true });
    github.setPermission('acme', 'app', 'claude-dev', 'write');
    github.setPermission('acme', 'app', 'reader', 'read');
    github.gitRepo('acme', 'app', { main: { 'src/a.txt': 'a\n' } });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fake-github-git-test-'));
  });
  afterEach(async () => {
    await github.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it.each([
    ['x-access-token:TOKEN', (t: string) => basic('x-access-token', t)],
    ['login:TOKEN', (t: string) => basic('claude-dev', t)],
    ['TOKEN:x-oauth-basic', (t: string) => basic(t, 'x-oauth-basic')],
  ])('clones a private repository with Basic %s, pushes a branch, opens a pull request of it', async (_name, header) => {
    const clone = await gitRun(dir, ['clone', '--quiet', `${github.url}/acme/app.git`, 'work'], header(dev));
    expect(clone, clone.stderr).toMatchObject({ code: 0 });
    const work = path.join(dir, 'work');
    expect(fs.readFileSync(path.join(work, 'src/a.txt'), 'utf8')).toBe('a\n');
    git(work, 'checkout', '--quiet', '-b', 'feature/issue-1-x');
    fs.writeFileSync(path.join(work, 'b.txt'), 'b\n');
    git(work, 'add', '-A');
    git(work, '-c', 'user.name=t', '-c', 'user.email=t@example.invalid', 'commit', '--quiet', '-m', 'b');
    const push = await gitRun(work, ['push', '--quiet', 'origin', 'HEAD'], header(dev));
    expect(push, push.stderr).toMatchObject({ code: 0 });

    const api = (p: string, init: RequestInit = {}) =>
      fetch(`${github.apiUrl}/repos/acme/app${p}`, {
        ...init,
        headers: { authorization: `Bearer ${dev}`, 'content-type': 'application/json' },
      });
    const branch = await api('/branches/feature/issue-1-x');
    expect(branch.status).toBe(200);
    expect(await branch.json()).toMatchObject({
      name: 'feature/issue-1-x',
      protected: false,
      commit: { sha: git(work, 'rev-parse', 'HEAD') },
    });
    expect((await api('/branches/nope')).status).toBe(404);
    const opened = await api('/pulls', { method: 'POST', body: JSON.stringify({ title: 'X', head: 'feature/issue-1-x', base: 'main' }) });
    expect(opened.status).toBe(201);
    expect(await opened.json()).toMatchObject({ number: 1, state: 'open', head: { ref: 'feature/issue-1-x' }, base: { ref: 'main' } });
    const again = await api('/pulls', { method: 'POST', body: JSON.stringify({ title: 'X', head: 'feature/issue-1-x', base: 'main' }) });
    expect(again.status).toBe(422);
    expect(await again.json()).toMatchObject({
      errors: [{ code: 'custom', message: 'A pull request already exists for acme:feature/issue-1-x.' }],
    });
    const none = await api('/pulls', { method: 'POST', body: JSON.stringify({ title: 'Y', head: 'nope', base: 'main' }) });
    expect(await none.json()).toMatchObject({ message: 'Validation Failed', errors: [{ field: 'head', code: 'invalid' }] });
  });

  it('refuses what GitHub refuses: no credentials, a bad token, a reader’s push, a stranger', async () => {
    const url = `${github.url}/acme/app.git`;
    expect((await gitRun(dir, ['ls-remote', url])).stderr).toMatch(/could not read Username|Authentication failed/);
    // git answers a 401 by asking for credentials, so what GitHub says is read directly.
    const refs = `${url}/info/refs?service=git-upload-pack`;
    const bad = await fetch(refs, { headers: { authorization: basic('x-access-token', 'ghp_nope').slice('Authorization: '.length) } });
    expect(bad.status).toBe(401);
    expect(bad.headers.get('www-authenticate')).toBe('Basic realm="GitHub"');
    expect(await bad.text()).toContain('Password authentication is not supported');
    expect((await gitRun(dir, ['clone', '--quiet', url, 'r'], basic('x-access-token', reader))).code).toBe(0);
    const work = path.join(dir, 'r');
    git(work, 'checkout', '--quiet', '-b', 'x');
    const push = await gitRun(work, ['push', '--quiet', 'origin', 'HEAD'], basic('x-access-token', reader));
    expect(push.stderr).toContain('Permission to acme/app.git denied to reader.');
    const stranger = github.addUser('stranger').token;
    expect((await gitRun(dir, ['ls-remote', url], basic('x-access-token', stranger))).stderr).toContain('Repository not found.');
  });
});
