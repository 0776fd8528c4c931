import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Delivery } from '../../src/ingress/index.js';
import type { Store } from '../../src/store/index.js';
import { createFakeGitHub, type FakeGitHub } from '../fakes/github/index.js';
import type { ServeHandle } from '../helpers/baton-bin.js';
import { acceptedDelivery } from '../helpers/deliveries.js';
import { startForgeServe, type ForgeServe } from '../helpers/forge-serve.js';
import { githubExample, githubHeaders } from '../helpers/github-webhook.js';
import { until } from '../helpers/until.js';

/**
 * The dev bot as a GitHub App, through the real `baton serve`: `GITHUB_APP_ID` and the App's
 * `.pem` instead of a dev token. Runs comment as `<slug>[bot]`, clone through the forge gateway
 * with installation tokens narrowed to their repository, and the App's own events start nothing.
 * The review bot keeps its personal token (GitHub refuses an App's approval of its own pull
 * request as it refuses a user's).
 */

const FAKE_CLAUDE = fileURLToPath(new URL('../fakes/agent/fake-claude.mjs', import.meta.url));
const SECRET = 'e2e-github-app-webhook-secret';
const TERMINAL = ['succeeded', 'failed', 'timed_out', 'cancelled', 'dead'];
const OWNER = 'Codertocat';
const REPO = 'Hello-World';

describe('baton serve with a GitHub App as the dev bot', () => {
  let keyDir: string;
  let github: FakeGitHub;
  let app: ReturnType<FakeGitHub['addApp']>;
  let installation: number;
  let serve: ForgeServe;
  let server: ServeHandle;
  let store: Store;

  beforeAll(async () => {
    github = await createFakeGitHub();
    app = github.addApp('baton-ci');
    const review = github.addUser('claude-review');
    github.addUser(OWNER);
    github.addRepo(OWNER, REPO);
    github.addRepo(OWNER, 'Other');
    github.state.repo(OWNER, REPO)!.defaultBranch = 'master';
    execFileSync('git', ['-C', github.gitRepo(OWNER, REPO), 'branch', 'changes', 'main']);
    // Installed on two repositories: each run's token must reach its own only.
    installation = github.installApp(app.id, OWNER, [REPO, 'Other']);
    github.setPermission(OWNER, REPO, 'claude-review', 'write');
    for (const name of ['bug', 'ready-for-development']) github.addLabel(OWNER, REPO, name);
    github.addIssue(OWNER, REPO, { title: 'Spelling error in the README file', author: OWNER, labels: ['bug'] });
    github.addPullRequest(OWNER, REPO, {
      title: 'Update the README with new information.',
      author: OWNER,
      head: 'changes',
      base: 'master',
    });
    keyDir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-e2e-github-app-key-'));
    const keyFile = path.join(keyDir, 'app.pem');
    fs.writeFileSync(keyFile, app.privateKey, { mode: 0o600 });
    serve = await startForgeServe({
      name: 'github-app',
      readOnlyPaths: [path.dirname(FAKE_CLAUDE)],
      config: 'pipeline:\n  stages:\n    review-code: { success: result }\n',
      env: {
        GITHUB_URL: github.url,
        GITHUB_APP_ID: String(app.id),
        GITHUB_APP_PRIVATE_KEY_FILE: keyFile,
        GITHUB_REVIEW_TOKEN: review.token,
        GITHUB_WEBHOOK_SECRET: SECRET,
        QUEUE_CONCURRENCY: '2',
        BATON_AGENT_COMMAND: JSON.stringify([process.execPath, FAKE_CLAUDE]),
      },
    });
    ({ server, store } = serve);
  }, 60_000);

  afterAll(async () => {
    try {
      await serve?.close();
    } finally {
      await github?.close();
      fs.rmSync(keyDir, { recursive: true, force: true });
    }
  }, 60_000);

  /** A delivery of the App's webhook: GitHub adds the installation to every App delivery. */
  async function send(event: string, payload: Record<string, unknown>): Promise<Delivery> {
    const body = JSON.stringify({ ...payload, installation: { id: installation, node_id: `MDIz${installation}` } });
    const headers = githubHeaders(body, { event, secret: SECRET });
    const res = await fetch(`${server.url}/webhook/github`, { method: 'POST', headers, body });
    const answer = (await res.json()) as Record<string, unknown>;
    expect(res.status, JSON.stringify(answer)).toBe(202);
    return acceptedDelivery(store, answer, { body, headers });
  }
  const finished = (id: number) =>
    until(async () => {
      const row = await store.db.selectFrom('runs').select(['id', 'key', 'status', 'last_error']).where('id', '=', id).executeTakeFirst();
      return row && TERMINAL.includes(row.status) ? row : null;
    }, `run ${id} to finish`);

  it('runs an opened issue as the App: comments by baton-ci[bot], git through the gateway with a token of this repository only', async () => {
    const delivery = await send('issues', githubExample('issues', 'opened'));
    expect(delivery, String(delivery.verdict)).toMatchObject({ outcome: 'started', stages: ['fix-bug'] });
    const row = await finished(delivery.runIds[0]!);
    // The fake agent pushes nothing: the claimed success is checked on GitHub, as the App, and fails.
    expect(row.key).toBe(`fix-bug:github:${OWNER}/${REPO}#1`);
    expect(row.last_error, server.output()).toMatch(/^outcome_missing: /);
    const final = await until(
      () => github.comments(OWNER, REPO, 1).find((c) => c.body.includes('**fix-bug** failed')),
      'the final comment on #1',
    );
    expect(final.author).toBe('baton-ci[bot]');
    expect(new Set(github.comments(OWNER, REPO, 1).map((c) => c.author))).toEqual(new Set(['baton-ci[bot]']));
    // The workspace fetched the repository through baton's gateway, which used an installation token.
    expect(github.requests).toContain(`GET /${OWNER}/${REPO}.git/info/refs`);
    const minted = github.mintedTokens();
    expect(minted.length).toBeGreaterThan(0);
    for (const token of minted) expect(token).toEqual({ repos: [`${OWNER}/${REPO}`.toLowerCase()], repositoriesAsked: [REPO] });
  });

  it("starts nothing for the App's own label change (its bot login is one of baton's bots)", async () => {
    const labeled = githubExample('issues', 'labeled');
    labeled.label = { ...(labeled.label as object), name: 'ready-for-development' };
    (labeled.issue as { labels: object[] }).labels = [{ name: 'bug' }, { name: 'ready-for-development' }];
    labeled.sender = { ...(labeled.sender as object), login: app.login, type: 'Bot' };
    const delivery = await send('issues', labeled);
    expect(delivery).toMatchObject({ outcome: 'ignored', runIds: [] });
    expect(delivery.verdict).toContain('bot sender');
  });

  it('reviews a pull request as the review bot, with its own token', async () => {
    const delivery = await send('pull_request', githubExample('pull_request', 'opened'));
    expect(delivery, String(delivery.verdict)).toMatchObject({ outcome: 'started', stages: ['review-code'] });
    expect(await finished(delivery.runIds[0]!)).toMatchObject({ status: 'succeeded' });
    const comment = await until(
      () => github.comments(OWNER, REPO, 2).find((c) => c.body.includes('**review-code** finished')),
      'the review’s comment',
    );
    expect(comment.author).toBe('claude-review');
  });
});
