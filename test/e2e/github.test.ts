import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Delivery } from '../../src/ingress/index.js';
import { createStore, type Store } from '../../src/store/index.js';
import { createFakeGitHub, type FakeGitHub } from '../fakes/github/index.js';
import { startServe, type ServeHandle } from '../helpers/baton-bin.js';
import { acceptedDelivery } from '../helpers/deliveries.js';
import { githubExample, githubHeaders } from '../helpers/github-webhook.js';
import { until } from '../helpers/until.js';

/**
 * GitHub through the real `baton serve`: bodies of `@octokit/webhooks-examples` (the corpus's
 * repository, Codertocat/Hello-World: issue #1, pull request #2), signed as GitHub signs them,
 * become runs whose status comments reach a fake GitHub as the bot accounts. No Gitea at all.
 */

const FAKE_CLAUDE = fileURLToPath(new URL('../fakes/agent/fake-claude.mjs', import.meta.url));
const SECRET = 'e2e-github-webhook-secret';
const TERMINAL = ['succeeded', 'failed', 'timed_out', 'cancelled', 'dead'];
const OWNER = 'Codertocat';
const REPO = 'Hello-World';

interface Answer {
  status: number;
  body: Record<string, unknown>;
  delivery?: Delivery;
}

describe('baton serve with GitHub: webhook → run → comment, end to end', () => {
  let root: string;
  let github: FakeGitHub;
  let server: ServeHandle;
  let store: Store;
  let env: Record<string, string>;

  beforeAll(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-e2e-github-'));
    fs.chmodSync(root, 0o711);
    github = await createFakeGitHub();
    const dev = github.addUser('claude-dev');
    const review = github.addUser('claude-review');
    github.addUser(OWNER);
    github.addRepo(OWNER, REPO);
    // The repository's git, served by the fake GitHub; the corpus's pull request is `changes` into `master`.
    github.state.repo(OWNER, REPO)!.defaultBranch = 'master';
    execFileSync('git', ['-C', github.gitRepo(OWNER, REPO), 'branch', 'changes', 'main']);
    github.setPermission(OWNER, REPO, 'claude-dev', 'write');
    github.setPermission(OWNER, REPO, 'claude-review', 'write');
    for (const name of ['bug', 'ready-for-development', 'ready-for-architecture']) github.addLabel(OWNER, REPO, name);
    github.addIssue(OWNER, REPO, { title: 'Spelling error in the README file', author: OWNER, labels: ['bug'] });
    github.addPullRequest(OWNER, REPO, {
      title: 'Update the README with new information.',
      author: OWNER,
      head: 'changes',
      base: 'master',
    });

    // Workspaces clone GITHUB_URL's copy (never the payload's clone_url) through baton's forge gateway.
    const home = path.join(root, 'home');
    fs.mkdirSync(home);
    const gitConfig = path.join(home, '.gitconfig');
    fs.writeFileSync(
      gitConfig,
      ['[user]', '\tname = Baton E2E', '\temail = baton-e2e@example.invalid', '[safe]', '\tdirectory = *', ''].join('\n'),
    );
    fs.writeFileSync(
      path.join(root, 'baton.yaml'),
      `local:\n  readOnlyPaths: [${JSON.stringify(path.dirname(FAKE_CLAUDE))}]\n  gitConfig: ${JSON.stringify(gitConfig)}\n` +
        // The fake agent submits no review: review-code's success is its result here. The other
        // stages' success is checked on GitHub (the fake agent pushes nothing).
        'pipeline:\n  stages:\n    review-code: { success: result }\n',
    );
    env = {
      HOME: home,
      HOST: '127.0.0.1',
      GITHUB_URL: github.url,
      GITHUB_DEV_TOKEN: dev.token,
      GITHUB_REVIEW_TOKEN: review.token,
      GITHUB_WEBHOOK_SECRET: SECRET,
      DATABASE_URL: `sqlite:${path.join(root, 'baton.db')}`,
      BATON_DATA_DIR: path.join(root, 'data'),
      QUEUE_CONCURRENCY: '2',
      BATON_AGENT_COMMAND: JSON.stringify([process.execPath, FAKE_CLAUDE]),
    };
    server = await startServe(env, root);
    await until(async () => (await fetch(`${server.url}/ready`).catch(() => null))?.status === 200, 'baton serve to be ready');
    store = createStore({ url: env.DATABASE_URL! });
  }, 60_000);

  afterAll(async () => {
    try {
      if (server) {
        const code = await server.stop('SIGTERM');
        if (code !== 0) throw new Error(`baton serve exited with ${code}:\n${server.output()}`);
      }
    } finally {
      await store?.close();
      await github?.close();
      fs.rmSync(root, { recursive: true, force: true });
    }
  }, 60_000);

  async function send(
    event: string,
    payload: unknown,
    options: { delivery?: string; hookId?: number; secret?: string | null } = {},
  ): Promise<Answer> {
    const body = JSON.stringify(payload);
    const secret = options.secret === null ? undefined : (options.secret ?? SECRET);
    const headers = githubHeaders(body, { event, secret, delivery: options.delivery, hookId: options.hookId });
    const res = await fetch(`${server.url}/webhook/github`, { method: 'POST', headers, body });
    const answer = (await res.json()) as Record<string, unknown>;
    if (res.status !== 202) return { status: res.status, body: answer };
    return { status: res.status, body: answer, delivery: await acceptedDelivery(store, answer, { body, headers }) };
  }

  const runs = () =>
    store.db
      .selectFrom('runs')
      .select(['id', 'key', 'stage', 'status', 'number', 'last_error', sql<string>`forge`.as('forge')])
      .orderBy('id')
      .execute();
  async function routed(answer: Answer, stage: string): Promise<number> {
    expect(answer.status, JSON.stringify(answer.body)).toBe(202);
    expect(answer.delivery, String(answer.delivery?.verdict)).toMatchObject({ outcome: 'started', stages: [stage] });
    return answer.delivery!.runIds[0]!;
  }
  const finished = (id: number) =>
    until(async () => {
      const row = (await runs()).find((r) => r.id === id);
      return row && TERMINAL.includes(row.status) ? row : null;
    }, `run ${id} to finish`);

  const opened = githubExample('issues', 'opened');
  const openedDelivery = randomUUID();

  it('makes a run of a signed issues.opened whose status comments reach GitHub as the dev bot; its claimed success is checked there', async () => {
    const id = await routed(await send('issues', opened, { delivery: openedDelivery }), 'fix-bug');
    const row = await finished(id);
    // The agent said it succeeded, but GitHub has no pull request of the issue: the run fails,
    // and the comment on the issue says why.
    const missing =
      'The agent reported success but pushed nothing to a branch of issue #1 (`feature/issue-1-…`, `fix/issue-1-…`) and opened or updated no pull request.';
    expect(row, `${row.last_error}\n${server.output()}`).toMatchObject({
      status: 'failed',
      key: `fix-bug:github:${OWNER}/${REPO}#1`,
      forge: 'github',
      last_error: `outcome_missing: ${missing}`,
    });
    const final = await until(
      () => github.comments(OWNER, REPO, 1).find((c) => c.body.includes('**fix-bug** failed')),
      'the final comment on #1',
    );
    expect(final.body).toContain(missing);
    expect(final.author).toBe('claude-dev');
    const comments = github.comments(OWNER, REPO, 1);
    expect(comments.some((c) => c.body.includes('**fix-bug** is queued'))).toBe(true);
    expect(new Set(comments.map((c) => c.author))).toEqual(new Set(['claude-dev']));
  });

  it('has one effect for a redelivery (GitHub keeps the delivery GUID)', async () => {
    const before = (await runs()).length;
    const again = await send('issues', opened, { delivery: openedDelivery });
    expect(again.delivery).toMatchObject({ outcome: 'duplicate' });
    expect(await runs()).toHaveLength(before);
  });

  it('refuses an unsigned and a wrongly signed delivery', async () => {
    const before = (await runs()).length;
    expect((await send('issues', opened, { secret: null })).status).toBe(401);
    expect((await send('issues', opened, { secret: 'not-the-secret' })).status).toBe(401);
    expect(await runs()).toHaveLength(before);
  });

  it('starts develop when ready-for-development is added', async () => {
    github.labelIssue(OWNER, REPO, 1, 'ready-for-development', OWNER);
    // The real `issues.labeled` body, its label renamed to a stage's (the corpus labels only `bug`).
    const labeled = githubExample('issues', 'labeled');
    labeled.label = { ...(labeled.label as object), name: 'ready-for-development' };
    (labeled.issue as { labels: object[] }).labels = [{ name: 'bug' }, { name: 'ready-for-development' }];
    const id = await routed(await send('issues', labeled), 'develop');
    expect((await finished(id)).key).toBe(`develop:github:${OWNER}/${REPO}#1`);
  });

  it('reviews an opened pull request and a push to it, as the review bot', async () => {
    const id = await routed(await send('pull_request', githubExample('pull_request', 'opened')), 'review-code');
    expect(await finished(id)).toMatchObject({ status: 'succeeded', key: `review-code:github:${OWNER}/${REPO}#2` });
    // The corpus's synchronize names the same head as its opened; a push makes a new one.
    const pushed = githubExample('pull_request', 'synchronize');
    const sha = 'c'.repeat(40);
    (pushed.pull_request as { head: { sha: string } }).head.sha = sha;
    github.issue(OWNER, REPO, 2)!.pull!.sha = sha;
    const again = await routed(await send('pull_request', pushed), 'review-code');
    expect(again).not.toBe(id);
    await finished(again);
    await until(() => github.comments(OWNER, REPO, 2).find((c) => c.body.includes('**review-code** finished')), 'the review’s comment');
    expect(github.comments(OWNER, REPO, 2).find((c) => c.body.includes('**review-code** finished'))?.author).toBe('claude-review');
  });

  it('starts rework-pr for a review asking for changes', async () => {
    // The corpus's reviews are all `commented`; GitHub's state for a request for changes is `changes_requested`.
    const review = githubExample('pull_request_review', 'submitted');
    (review.review as { state: string }).state = 'changes_requested';
    const id = await routed(await send('pull_request_review', review), 'rework-pr');
    expect((await finished(id)).key).toBe(`rework-pr:github:${OWNER}/${REPO}#2`);
  });

  it('catches up on a label added while baton was down', async () => {
    const code = await server.stop('SIGTERM');
    expect(code, server.output()).toBe(0);
    github.labelIssue(OWNER, REPO, 1, 'ready-for-architecture', OWNER);
    server = await startServe(env, root);
    const row = await until(async () => (await runs()).find((r) => r.stage === 'architect'), 'catch-up to start architect', 30_000);
    expect(row).toMatchObject({ key: `architect:github:${OWNER}/${REPO}#1`, forge: 'github' });
    const delivery = await store.db
      .selectFrom('inbox_deliveries')
      .select(['source', 'endpoint'])
      .where('source', '=', 'sync')
      .executeTakeFirst();
    expect(delivery).toEqual({ source: 'sync', endpoint: 'sync:github' });
    await finished(row.id);
    // This test started the server: it stops it too (afterAll finds it stopped).
    expect(await server.stop('SIGTERM'), server.output()).toBe(0);
  });
});
