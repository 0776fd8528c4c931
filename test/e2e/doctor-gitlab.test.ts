import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createFakeGitLab, type FakeGitLab } from '../fakes/gitlab/index.js';
import { runBaton } from '../helpers/baton-bin.js';
import { REPO_ROOT } from '../helpers/child.js';

const FAKE_CLAUDE = path.join(REPO_ROOT, 'test/fakes/agent/fake-claude.mjs');

describe('baton doctor with GitLab', { timeout: 120_000 }, () => {
  let dir: string;
  let gitlab: FakeGitLab;
  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-doctor-gitlab-'));
    fs.chmodSync(dir, 0o711);
    gitlab = await createFakeGitLab();
  });
  afterEach(async () => {
    await gitlab.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const doctor = (env: Record<string, string>) =>
    runBaton(['doctor'], {
      cwd: dir,
      env: {
        BATON_AGENT_COMMAND: JSON.stringify([FAKE_CLAUDE]),
        CLAUDE_OAUTH_TOKEN: 'oauth-token-for-tests',
        GITLAB_URL: gitlab.url,
        ...env,
      },
    });

  it('checks each GitLab bot token against the login the pipeline knows, and the hook’s secret token', async () => {
    const dev = gitlab.addUser('claude-dev').token;
    const other = gitlab.addUser('ops').token;
    const result = await doctor({ GITLAB_DEV_TOKEN: dev, GITLAB_REVIEW_TOKEN: other, GITLAB_WEBHOOK_SECRET: 's3cret-0123456789' });
    expect(result.stdout).toMatch(/^info\s+forge: GITEA_URL is not set: Gitea and Forgejo are off \(GitLab is configured\)$/m);
    expect(result.stdout).toMatch(/^ok\s+gitlab webhook secret: GITLAB_WEBHOOK_SECRET is set/m);
    expect(result.stdout).toMatch(/^ok\s+gitlab bot dev: GITLAB_DEV_TOKEN is claude-dev's and valid$/m);
    expect(result.stdout).toMatch(/^FAIL\s+gitlab bot review: GITLAB_REVIEW_TOKEN belongs to ops, not to claude-review/m);
    expect(gitlab.requests).toContain('GET /api/v4/user');
    expect(result.stdout).not.toContain(dev);
    expect(result.code).toBe(1);
  });

  it('names a token GitLab rejects', async () => {
    gitlab.addUser('claude-review', { token: 'glpat-review' });
    const result = await doctor({
      GITLAB_DEV_TOKEN: 'glpat-revoked',
      GITLAB_REVIEW_TOKEN: 'glpat-review',
      GITLAB_WEBHOOK_SECRET: 's3cret-0123456789',
    });
    expect(result.stdout).toMatch(/^FAIL\s+gitlab bot dev: the forge rejects GITLAB_DEV_TOKEN \(401\)/m);
    expect(result.stdout).toMatch(/^ok\s+gitlab bot review: GITLAB_REVIEW_TOKEN is claude-review's and valid$/m);
    expect(result.stdout).not.toContain('glpat-revoked');
    expect(result.code).toBe(1);
  });

  it('refuses to start without the webhook secret, naming it', async () => {
    const result = await doctor({ GITLAB_DEV_TOKEN: gitlab.addUser('claude-dev').token });
    expect(result.stdout).toMatch(/^FAIL\s+configuration: GITLAB_WEBHOOK_SECRET .*is required when GITLAB_URL is set$/m);
    expect(result.code).toBe(1);
  });
});
