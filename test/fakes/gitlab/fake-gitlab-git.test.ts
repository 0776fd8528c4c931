import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { git } from '../agent/git-repos.js';
import { createFakeGitLab, type FakeGitLab } from './index.js';

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

/** Git's smart HTTP on the fake GitLab, with GitLab's authentication (repository.ts has the sources). */
describe('fake GitLab git smart HTTP and the endpoints over it', () => {
  let gitlab: FakeGitLab;
  let dev: string;
  let reporter: string;
  let dir: string;

  beforeEach(async () => {
    gitlab = await createFakeGitLab();
    dev = gitlab.addUser('claude-dev').token;
    reporter = gitlab.addUser('reporter').token;
    gitlab.addProject('acme', 'app');
    gitlab.setAccess('acme', 'app', 'claude-dev', 30);
    gitlab.setAccess('acme', 'app', 'reporter', 20);
    gitlab.gitRepo('acme', 'app', { main: { 'src/a.txt': 'a\n' } });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fake-gitlab-git-test-'));
  });
  afterEach(async () => {
    await gitlab.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it.each([
    ['oauth2:TOKEN', (t: string) => basic('oauth2', t)],
    ['any-name:TOKEN', (t: string) => basic('whoever', t)],
  ])('clones a private project with Basic %s, pushes a branch, opens a merge request of it', async (_name, header) => {
    const clone = await gitRun(dir, ['clone', '--quiet', `${gitlab.url}/acme/app.git`, 'work'], header(dev));
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
      fetch(`${gitlab.apiUrl}/projects/acme%2Fapp${p}`, { ...init, headers: { 'private-token': dev, 'content-type': 'application/json' } });
    const branch = await api('/repository/branches/feature%2Fissue-1-x');
    expect(branch.status).toBe(200);
    expect(await branch.json()).toMatchObject({ name: 'feature/issue-1-x', protected: false, default: false, can_push: true });
    expect(await (await api('/repository/branches/nope')).json()).toEqual({ message: '404 Branch Not Found' });
    const body = JSON.stringify({ source_branch: 'feature/issue-1-x', target_branch: 'main', title: 'X' });
    const opened = await api('/merge_requests', { method: 'POST', body });
    expect(opened.status).toBe(201);
    expect(await opened.json()).toMatchObject({ iid: 1, state: 'opened', source_branch: 'feature/issue-1-x', target_branch: 'main' });
    const again = await api('/merge_requests', { method: 'POST', body });
    expect(again.status).toBe(409);
    expect(await again.json()).toEqual({ message: ['Another open merge request already exists for this source branch: !1'] });
    const untitled = await api('/merge_requests', { method: 'POST', body: JSON.stringify({ source_branch: 'x', target_branch: 'main' }) });
    expect(untitled.status).toBe(400);
  });

  it('refuses what GitLab refuses: no credentials, a bad token, a Reporter’s push, a stranger', async () => {
    const url = `${gitlab.url}/acme/app.git`;
    expect((await gitRun(dir, ['ls-remote', url])).code).not.toBe(0);
    // git answers a 401 by asking for credentials, so what GitLab says is read directly.
    const bad = await fetch(`${url}/info/refs?service=git-upload-pack`, {
      headers: { authorization: basic('oauth2', 'glpat-nope').slice('Authorization: '.length) },
    });
    expect(bad.status).toBe(401);
    expect(bad.headers.get('www-authenticate')).toBe('Basic realm="GitLab"');
    expect(await bad.text()).toContain('HTTP Basic: Access denied');
    expect((await gitRun(dir, ['clone', '--quiet', url, 'r'], basic('oauth2', reporter))).code).toBe(0);
    const work = path.join(dir, 'r');
    git(work, 'checkout', '--quiet', '-b', 'x');
    const push = await gitRun(work, ['push', '--quiet', 'origin', 'HEAD'], basic('oauth2', reporter));
    expect(push.stderr).toContain('You are not allowed to push code to this project.');
    const stranger = gitlab.addUser('stranger').token;
    expect((await gitRun(dir, ['ls-remote', url], basic('oauth2', stranger))).stderr).toContain('could not be found');
  });
});

/** A project in a subgroup, as GitLab serves it: full path everywhere, membership inherited from the groups above. */
describe('fake GitLab projects in subgroups', () => {
  let gitlab: FakeGitLab;
  let dir: string;

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fake-gitlab-subgroup-test-'));
  });
  afterEach(async () => {
    await gitlab.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('answers by URL-encoded full path with the namespace’s own path and full path, and inherits access from every group above', async () => {
    gitlab = await createFakeGitLab();
    const dev = gitlab.addUser('claude-dev');
    const lead = gitlab.addUser('lead');
    const stranger = gitlab.addUser('stranger');
    gitlab.addProject('acme/platform', 'app');
    gitlab.setGroupAccess('acme', 'claude-dev', 30);
    gitlab.setGroupAccess('acme/platform', 'lead', 40);
    // A group named like the subgroup's start but not above it gives nothing.
    gitlab.setGroupAccess('acme/plat', 'stranger', 50);
    gitlab.gitRepo('acme/platform', 'app', { main: { 'a.txt': 'a\n' } });
    const get = (p: string, token: string) => fetch(`${gitlab.apiUrl}${p}`, { headers: { 'private-token': token } });

    const project = await get('/projects/acme%2Fplatform%2Fapp', dev.token);
    expect(project.status).toBe(200);
    expect(await project.json()).toMatchObject({
      path: 'app',
      path_with_namespace: 'acme/platform/app',
      namespace: { path: 'platform', full_path: 'acme/platform', kind: 'group' },
    });
    for (const [user, level] of [
      [dev, 30],
      [lead, 40],
    ] as const) {
      const member = await get(`/projects/acme%2Fplatform%2Fapp/members/all/${user.id}`, dev.token);
      expect(await member.json()).toMatchObject({ username: user.username, access_level: level });
    }
    expect((await get('/projects/acme%2Fplatform%2Fapp', stranger.token)).status).toBe(404);
    // The parent group is not a project.
    expect((await get('/projects/acme%2Fplatform', dev.token)).status).toBe(404);

    const clone = await gitRun(dir, ['clone', '--quiet', `${gitlab.url}/acme/platform/app.git`, 'work'], basic('oauth2', dev.token));
    expect(clone, clone.stderr).toMatchObject({ code: 0 });
    expect(fs.readFileSync(path.join(dir, 'work', 'a.txt'), 'utf8')).toBe('a\n');
    const refused = await gitRun(
      dir,
      ['clone', '--quiet', `${gitlab.url}/acme/platform/app.git`, 'other'],
      basic('oauth2', stranger.token),
    );
    expect(refused.code).not.toBe(0);
  });
});
