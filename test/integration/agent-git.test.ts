import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runAgent } from '../../src/agent/index.js';
import { createBareRepo, git, serveGitRepos, type GitHttpServer } from '../fakes/agent/git-repos.js';
import { createRunnerFixture, GITEA_TOKEN, type RunnerFixture } from '../fakes/agent/runner-fixture.js';

// Names that reach git in the workspace come from outside baton: the repository name from the
// webhook, the default branch from whoever administers the repository on the forge. The
// repositories here are real, served over git's smart HTTP protocol where a Gitea would serve
// them (`<forge>/<owner>/<repo>.git`, private, the bot's token as Basic credentials).

let fixture: RunnerFixture;
let forge: GitHttpServer;
let repos: string;

beforeEach(async () => {
  fixture = await createRunnerFixture();
  repos = path.join(fixture.root, 'forge');
  fs.mkdirSync(path.join(repos, 'acme'), { recursive: true });
  forge = await serveGitRepos(repos, { token: GITEA_TOKEN });
});

afterEach(async () => {
  await forge.close();
  await fixture.close();
});

describe('git in the workspace', () => {
  it('clones a private repository over HTTP with the bot token and works on develop', async () => {
    createBareRepo(path.join(repos, 'acme'), 'app');
    const opts = fixture.options('success', { cloneUrl: `${forge.url}/acme/app.git` });
    const outcome = await runAgent(opts);
    expect(outcome).toMatchObject({ status: 'succeeded' });
    const record = fixture.readRecord(opts.record);
    expect(git(record.cwd, 'rev-parse', '--abbrev-ref', 'HEAD')).toBe('develop');
    expect(git(record.cwd, 'rev-parse', '--abbrev-ref', '@{upstream}')).toBe('origin/develop');
    expect(forge.authorizations).toContain(`Basic ${Buffer.from(`${GITEA_TOKEN}:x-oauth-basic`).toString('base64')}`);
  });

  it('answers a clone without the token as Gitea does, and the run says so', async () => {
    createBareRepo(path.join(repos, 'acme'), 'app');
    const cloneUrl = `${forge.url}/acme/app.git`;
    const outcome = await runAgent(fixture.options('success', { cloneUrl, forgeToken: undefined }));
    expect(outcome).toMatchObject({ status: 'failed', error: 'clone_failed' });
    expect(outcome.summary).toMatch(new RegExp(`^clone of ${cloneUrl} failed: .*(Authentication failed|could not read Username)`));
  });

  it('tells a forge outage (5xx) from a clone that cannot work: the first is worth another attempt', async () => {
    createBareRepo(path.join(repos, 'acme'), 'app');
    const cloneUrl = `${forge.url}/acme/app.git`;
    for (const status of [500, 502, 503]) {
      forge.outage(status);
      const outcome = await runAgent(fixture.options('success', { cloneUrl }));
      expect(outcome).toMatchObject({ status: 'failed', error: 'clone_unavailable' });
      expect(outcome.summary).toMatch(new RegExp(`^clone of ${cloneUrl} failed: .*returned error: ${status}`));
    }
    forge.outage(null);
    expect(await runAgent(fixture.options('success', { cloneUrl }))).toMatchObject({ status: 'succeeded' });
    // A forge that cannot be reached at all is an outage too.
    const closed = `http://127.0.0.1:1/acme/app.git`;
    expect(await runAgent(fixture.options('success', { cloneUrl: closed }))).toMatchObject({
      status: 'failed',
      error: 'clone_unavailable',
    });
  });

  it('refuses a default branch that starts with "-" before git sees it', async () => {
    createBareRepo(path.join(repos, 'acme'), 'app', { develop: null, defaultBranch: '-evil' });
    const opts = fixture.options('success', { cloneUrl: `${forge.url}/acme/app.git` });
    const outcome = await runAgent(opts);
    expect(outcome).toMatchObject({ status: 'failed', error: 'clone_failed' });
    expect(outcome.summary).toBe(`the remote's default branch "-evil" starts with "-"; such a branch is refused`);
    // The agent never ran, and nothing of that branch was checked out.
    expect(fs.existsSync(opts.record)).toBe(false);
    expect(fs.readdirSync(path.join(opts.workdir, 'app'))).toEqual(['.git']);
  });

  it('falls back to a default branch with an unusual but valid name', async () => {
    createBareRepo(path.join(repos, 'acme'), 'app', { develop: null, defaultBranch: 'release/2.x' });
    const opts = fixture.options('success', { cloneUrl: `${forge.url}/acme/app.git` });
    expect(await runAgent(opts)).toMatchObject({ status: 'succeeded' });
    expect(git(fixture.readRecord(opts.record).cwd, 'rev-parse', '--abbrev-ref', 'HEAD')).toBe('release/2.x');
  });

  it('refuses a working branch that starts with "-" or is not a branch name', async () => {
    createBareRepo(path.join(repos, 'acme'), 'app');
    for (const [branch, reason] of [
      ['--orphan=x', 'starts with "-"; such a branch is refused'],
      ['@{-1}', 'is not a valid branch name'],
      ['a..b', 'is not a valid branch name'],
    ]) {
      const outcome = await runAgent(fixture.options('success', { cloneUrl: `${forge.url}/acme/app.git`, branch }));
      expect(outcome).toMatchObject({ status: 'failed', error: 'clone_failed' });
      expect(outcome.summary).toBe(`the working branch (BATON_BRANCH) ${JSON.stringify(branch)} ${reason}`);
    }
  });

  it('keeps the clone inside the workspace: a repository name like ../../x is refused before any path is built', async () => {
    createBareRepo(path.join(repos, 'acme'), 'app');
    for (const repoName of ['../../x', '..', '.baton', 'a/b', '-x', 'x\ny']) {
      const opts = fixture.options('success', { cloneUrl: `${forge.url}/acme/app.git`, repoName });
      const before = fs.readdirSync(fixture.root).sort();
      const outcome = await runAgent(opts);
      expect(outcome).toMatchObject({ status: 'failed', error: 'clone_failed' });
      expect(outcome.summary).toBe(
        `repository name ${JSON.stringify(repoName)} cannot be a directory name in the workspace: use letters, digits, ".", "_" and "-" (not ".", ".." or a leading "-")`,
      );
      // Nothing was created next to the workspace (the run's own record file aside).
      expect(
        fs
          .readdirSync(fixture.root)
          .filter((f) => !f.startsWith('record-'))
          .sort(),
      ).toEqual(before.filter((f) => !f.startsWith('record-')));
    }
  });

  it('derives a safe directory from the clone URL when no name is given', async () => {
    createBareRepo(path.join(repos, 'acme'), 'shop.v2');
    const opts = fixture.options('success', { cloneUrl: `${forge.url}/acme/shop.v2.git`, repoName: undefined });
    expect(await runAgent(opts)).toMatchObject({ status: 'succeeded' });
    expect(fixture.readRecord(opts.record).cwd).toBe(path.join(opts.workdir, 'shop.v2'));
  });
});
