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

  it('checks a GitHub App: its JWT, its webhook and its events; the review bot keeps its token check', async () => {
    const app = github.addApp('baton-ci', { events: ['issues', 'issue_comment'] });
    const review = github.addUser('claude-review');
    const keyFile = path.join(dir, 'app.pem');
    fs.writeFileSync(keyFile, app.privateKey, { mode: 0o600 });
    const env = {
      GITHUB_APP_ID: String(app.id),
      GITHUB_APP_PRIVATE_KEY_FILE: keyFile,
      GITHUB_REVIEW_TOKEN: review.token,
      GITHUB_WEBHOOK_SECRET: 's3cret-0123456789',
      PUBLIC_URL: 'https://baton.example.com',
    };
    const result = await doctor(env);
    expect(result.stdout).toMatch(/^ok\s+github app: GITHUB_APP_ID is the App baton-ci: the dev bot acts as baton-ci\[bot\]$/m);
    expect(result.stdout).toMatch(
      /^FAIL\s+github app webhook: the App's webhook is \(none\), not https:\/\/baton.example.com\/webhook\/github/m,
    );
    expect(result.stdout).toMatch(/^FAIL\s+github app events: the App does not subscribe to pull_request, pull_request_review/m);
    expect(result.stdout).toMatch(/^ok\s+github bot review: GITHUB_REVIEW_TOKEN is claude-review's and valid$/m);
    expect(result.stdout).not.toMatch(/github bot dev/);
    expect(result.stdout).not.toContain(app.privateKey.split('\n')[1]);

    // Another App's key: GitHub cannot verify the JWT, and doctor says what to check.
    const other = github.addApp('someone-else');
    fs.writeFileSync(keyFile, other.privateKey);
    const refused = await doctor(env);
    expect(refused.stdout).toMatch(/^FAIL\s+github app: GitHub refuses the App's JWT \(401 A JSON web token could not be decoded\)/m);
    expect(refused.code).toBe(1);
  });

  it('refuses to start without the webhook secret, naming it', async () => {
    const result = await doctor({ GITHUB_DEV_TOKEN: github.addUser('claude-dev').token });
    expect(result.stdout).toMatch(/^FAIL\s+configuration: GITHUB_WEBHOOK_SECRET .*is required when GITHUB_URL is set$/m);
    expect(result.code).toBe(1);
  });
});
