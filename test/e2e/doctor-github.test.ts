import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createFakeGitHub, type FakeGitHub } from '../fakes/github/index.js';
import { runBaton } from '../helpers/baton-bin.js';
import { REPO_ROOT } from '../helpers/child.js';

const FAKE_CLAUDE = path.join(REPO_ROOT, 'test/fakes/agent/fake-claude.mjs');

describe('baton doctor with GitHub', { timeout: 120_000 }, () => {
  let dir: string;
  let github: FakeGitHub;
  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-doctor-github-'));
    fs.chmodSync(dir, 0o711);
    github = await createFakeGitHub();
  });
  afterEach(async () => {
    await github.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const doctor = (env: Record<string, string>) =>
    runBaton(['doctor'], {
      cwd: dir,
      env: {
        BATON_AGENT_COMMAND: JSON.stringify([FAKE_CLAUDE]),
        CLAUDE_OAUTH_TOKEN: 'oauth-token-for-tests',
        GITHUB_URL: github.url,
        ...env,
      },
    });

  it('checks each GitHub bot token against the login the pipeline knows', async () => {
    const dev = github.addUser('claude-dev').token;
    const other = github.addUser('ops').token;
    const result = await doctor({ GITHUB_DEV_TOKEN: dev, GITHUB_REVIEW_TOKEN: other, GITHUB_WEBHOOK_SECRET: 's3cret-0123456789' });
    expect(result.stdout).toMatch(/^info\s+forge: GITEA_URL is not set: Gitea and Forgejo are off \(GitHub is configured\)$/m);
    expect(result.stdout).toMatch(/^ok\s+github bot dev: GITHUB_DEV_TOKEN is claude-dev's and valid$/m);
    expect(result.stdout).toMatch(/^FAIL\s+github bot review: GITHUB_REVIEW_TOKEN belongs to ops, not to claude-review/m);
    expect(result.stdout).not.toContain(dev);
    expect(result.code).toBe(1);
  });

  it('refuses to start without the webhook secret, naming it', async () => {
    const result = await doctor({ GITHUB_DEV_TOKEN: github.addUser('claude-dev').token });
    expect(result.stdout).toMatch(/^FAIL\s+configuration: GITHUB_WEBHOOK_SECRET .*is required when GITHUB_URL is set$/m);
    expect(result.code).toBe(1);
  });
});
