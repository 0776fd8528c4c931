import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStore, type Store } from '../../src/store/index.js';
import { createBareRepo } from '../fakes/agent/git-repos.js';
import { createFakeGitea, type FakeGitea } from '../fakes/gitea/index.js';
import { startServe, type ServeHandle } from '../helpers/baton-bin.js';
import { fixtureJson, giteaHeaders, readFixture, toBody } from '../helpers/gitea-webhook.js';
import { describeWithReference } from '../helpers/reference.js';
import { until } from '../helpers/until.js';
import { acceptedDelivery } from '../helpers/deliveries.js';
import type { Delivery } from '../../src/ingress/index.js';

/**
 * The SDLC flow through the real `baton serve` (built CLI): signed Gitea webhooks in, runs queued
 * in SQLite, local workspaces running the real `baton agent` with a fake `claude`, completion
 * callbacks, status comments posted to a fake Gitea as the bot accounts, workspaces removed.
 */

const FAKE_CLAUDE = fileURLToPath(new URL('../fakes/agent/fake-claude.mjs', import.meta.url));
const SECRET = 'e2e-webhook-secret';
const DEV_TOKEN = 'e2e-dev-token-0123456789';
const REVIEW_TOKEN = 'e2e-review-token-0123456789';
const TERMINAL = ['succeeded', 'failed', 'timed_out', 'cancelled', 'dead'];

function label(name: string) {
  return { id: name.length, name, color: '0e8a16', description: '', exclusive: false, is_archived: false, url: '' };
}

interface Answer {
  status: number;
  body: Record<string, unknown>;
  /** On 202: the stored delivery once processed. */
  delivery?: Delivery;
}

describe('baton serve: webhook → run → agent → comment, end to end', () => {
  let root: string;
  let gitea: FakeGitea;
  let server: ServeHandle;
  let store: Store;
  let dataDir: string;

  beforeAll(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-e2e-pipeline-'));
    // Runs are sandboxed as nobody (this suite runs as root): it must reach the workspaces and repositories.
    fs.chmodSync(root, 0o711);
    dataDir = path.join(root, 'data');
    const repos = path.join(root, 'repos');
    for (const owner of ['example', 'acme']) fs.mkdirSync(path.join(repos, owner), { recursive: true });
    createBareRepo(path.join(repos, 'example'), 'example');
    createBareRepo(path.join(repos, 'acme'), 'app');

    // Workspaces clone from GITEA_CLONE_URL (http://gitea.test, never a payload's clone_url)
    // through the forge gateway; that host does not exist here, so git in the workspace (whose
    // ~/.gitconfig is local.gitConfig) is sent to the bare repositories instead, which the sandbox
    // may read (local.readOnlyPaths), though they belong to another user (safe.directory).
    const home = path.join(root, 'home');
    fs.mkdirSync(home);
    const gitConfig = path.join(home, '.gitconfig');
    fs.writeFileSync(
      gitConfig,
      [
        '[user]',
        '\tname = Baton E2E',
        '\temail = baton-e2e@example.invalid',
        `[url "file://${repos}/"]`,
        '\tinsteadOf = http://localhost:3000/',
        '\tinsteadOf = http://gitea.test/',
        // The forge gateway passes git on to GITEA_CLONE_URL, a host that does not exist here.
        '\tinsteadOf = http://baton.internal/gateway/',
        '[safe]',
        '\tdirectory = *',
        '',
      ].join('\n'),
    );
    fs.writeFileSync(
      path.join(root, 'baton.yaml'),
      `local:\n  readOnlyPaths: [${JSON.stringify(repos)}, ${JSON.stringify(path.dirname(FAKE_CLAUDE))}]\n  gitConfig: ${JSON.stringify(gitConfig)}\n` +
        // The fake agent pushes nothing and reviews nothing: this test is about routing and the
        // runs' lifecycle, so success is the agent's result here (test/integration/outcome-check.test.ts
        // checks the outcomes themselves).
        'pipeline:\n  stages:\n' +
        ['develop', 'fix-bug', 'rework-pr', 'review-code'].map((s) => `    ${s}: { success: result }\n`).join(''),
    );

    gitea = await createFakeGitea();
    gitea.addUser('claude-dev', { token: DEV_TOKEN });
    gitea.addUser('claude-review', { token: REVIEW_TOKEN });
    for (const login of ['example', 'alice', 'bob', 'carol']) gitea.addUser(login);
    gitea.addRepo('example', 'example');
    gitea.addIssue('example', 'example', { title: 'The reference issue', author: 'example' });
    gitea.addRepo('acme', 'app');
    // Numbers as in test/fixtures/gitea: issue #7, pull request #8; #9-#11 for the label stages.
    for (let n = 1; n <= 6; n++) gitea.addIssue('acme', 'app', { title: `filler ${n}`, author: 'alice' });
    gitea.addIssue('acme', 'app', { title: 'Editor crashes on draft', author: 'alice' });
    gitea.addPullRequest('acme', 'app', { title: 'Fix the draft crash', author: 'bob', head: 'fix/7-draft-crash', base: 'develop' });
    for (const n of [9, 10, 11]) gitea.addIssue('acme', 'app', { title: `label stage ${n}`, author: 'alice' });
    // Senders need write access (checked by default), which the dev bot reads as repository admin.
    for (const [owner, repo] of [
      ['example', 'example'],
      ['acme', 'app'],
    ] as const) {
      gitea.addCollaborator(owner, repo, 'claude-dev', 'admin');
      for (const login of ['example', 'alice', 'bob', 'carol']) gitea.addCollaborator(owner, repo, login, 'write');
    }

    server = await startServe(
      {
        HOME: home,
        HOST: '127.0.0.1',
        GITEA_URL: gitea.url,
        GITEA_CLONE_URL: 'http://gitea.test',
        GITEA_DEV_TOKEN: DEV_TOKEN,
        GITEA_REVIEW_TOKEN: REVIEW_TOKEN,
        WEBHOOK_SECRET: SECRET,
        DATABASE_URL: `sqlite:${path.join(root, 'baton.db')}`,
        BATON_DATA_DIR: dataDir,
        QUEUE_CONCURRENCY: '2',
        BATON_AGENT_COMMAND: JSON.stringify([process.execPath, FAKE_CLAUDE]),
      },
      root,
    );
    await until(async () => (await fetch(`${server.url}/ready`).catch(() => null))?.status === 200, 'baton serve to be ready');
    store = createStore({ url: `sqlite:${path.join(root, 'baton.db')}` });
  }, 60_000);

  afterAll(async () => {
    try {
      if (server) {
        // Runs still in flight are fine: a graceful stop must drain them and exit 0.
        const code = await server.stop('SIGTERM');
        if (code !== 0) throw new Error(`baton serve exited with ${code}:\n${server.output()}`);
      }
    } finally {
      await store?.close();
      await gitea?.close();
      fs.rmSync(root, { recursive: true, force: true });
    }
  }, 60_000);

  async function send(
    body: Buffer,
    event: string,
    eventType: string,
    options: { delivery?: string; secret?: string } = {},
  ): Promise<Answer> {
    const headers = giteaHeaders(body, { event, eventType, secret: options.secret ?? SECRET, delivery: options.delivery ?? randomUUID() });
    const res = await fetch(`${server.url}/webhook/gitea`, { method: 'POST', headers, body });
    const answer = (await res.json()) as Record<string, unknown>;
    // Accepting only stores the delivery; the inbox worker routes it: wait for its verdict.
    if (res.status !== 202) return { status: res.status, body: answer };
    return { status: res.status, body: answer, delivery: await acceptedDelivery(store, answer, { body, headers }) };
  }

  const run = (id: number) => store.db.selectFrom('runs').selectAll().where('id', '=', id).executeTakeFirst();
  const runCount = async () =>
    Number(
      (
        await store.db
          .selectFrom('runs')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  const statusPath = async (id: number) =>
    (await store.db.selectFrom('run_events').select('to_status').where('run_id', '=', id).orderBy('id').execute())
      .map((e) => e.to_status)
      .filter((s): s is string => s !== null);
  const workspaceDirs = () => (fs.existsSync(path.join(dataDir, 'workspaces')) ? fs.readdirSync(path.join(dataDir, 'workspaces')) : []);

  /** 202 with the stage, and a run row for it. */
  async function expectRouted(answer: Answer, stage: string): Promise<number> {
    expect(answer.status, JSON.stringify(answer.body)).toBe(202);
    expect(answer.delivery).toMatchObject({ outcome: 'started', stages: [stage] });
    const id = answer.delivery!.runIds[0]!;
    expect(await run(id)).toMatchObject({ stage });
    return id;
  }

  describeWithReference('gitea/payloads/gitea-issues-opened.json', 'the reference issues-opened payload', (referenceOpened) => {
    let body: Buffer;
    const delivery = randomUUID();
    let runId: number;

    it('is queued as analyse, runs the agent and comments the result as the dev bot', async () => {
      body = fs.readFileSync(referenceOpened);
      const answer = await send(body, 'issues', 'issues', { delivery });
      runId = await expectRouted(answer, 'analyse');
      expect(answer.delivery!.verdict).toBe('issue #1 opened by example');

      const done = await until(async () => {
        const row = await run(runId);
        return row && TERMINAL.includes(row.status) ? row : null;
      }, `run ${runId} to finish`);
      expect(done, `${done.last_error}\n${server.output()}`).toMatchObject({
        status: 'succeeded',
        stage: 'analyse',
        owner: 'example',
        repo: 'example',
        number: 1,
      });
      const statuses = await statusPath(runId);
      expect(statuses[0]).toBe('queued');
      expect(statuses).toContain('running');
      expect(statuses.indexOf('running')).toBeLessThan(statuses.indexOf('succeeded'));
      expect(statuses.at(-1)).toBe('succeeded');

      const final = await until(
        () => gitea.comments('example', 'example', 1).find((c) => c.body.includes('finished')),
        'the final comment on example/example#1',
      );
      expect(final.author).toBe('claude-dev');
      expect(final.body).toContain('**analyse** finished');
      expect(final.body).toContain('cost $0.01');
      expect(final.body).toContain('Finished the task for: ');
      const comments = gitea.comments('example', 'example', 1);
      expect(comments.map((c) => c.author)).toEqual(comments.map(() => 'claude-dev'));
      expect(comments.some((c) => c.body.includes('**analyse** is queued'))).toBe(true);
      expect(comments.some((c) => c.body.includes('**analyse** started in workspace'))).toBe(true);
      for (const c of comments) {
        expect(c.body).not.toContain(DEV_TOKEN);
        expect(c.body).not.toContain(REVIEW_TOKEN);
      }

      const workspace = done.workspace_name as string;
      expect(workspace).toBeTruthy();
      await until(() => !workspaceDirs().includes(workspace), `workspace ${workspace} to be removed`);
    }, 120_000);

    it("keeps a redelivery (same id, or Gitea's manual Redeliver with a new id) as a duplicate, with one run", async () => {
      expect(runId, 'the first case must have queued a run').toBeDefined();
      const before = await runCount();
      const again = await send(body, 'issues', 'issues', { delivery });
      expect(again.status).toBe(202);
      expect(again.delivery).toMatchObject({ outcome: 'duplicate', runIds: [] });
      const redelivered = await send(body, 'issues', 'issues', { delivery: randomUUID() });
      expect(redelivered.delivery).toMatchObject({ outcome: 'duplicate', runIds: [] });
      expect(await runCount()).toBe(before);
      const forIssue = await store.db
        .selectFrom('runs')
        .select('id')
        .where('owner', '=', 'example')
        .where('repo', '=', 'example')
        .execute();
      expect(forIssue.map((r) => r.id)).toEqual([runId]);
    }, 120_000);
  });

  describe('routing through the real server (own fixtures)', () => {
    it('starts fix-bug for an issue opened with the bug label', async () => {
      const payload = fixtureJson('issues-opened.json');
      (payload.issue as Record<string, unknown>).labels = [label('bug')];
      await expectRouted(await send(toBody(payload), 'issues', 'issues'), 'fix-bug');
    }, 120_000);

    it.each([
      ['ready-for-architecture', 9, 'architect'],
      ['ready-for-development', 10, 'develop'],
      ['ready-for-deployment', 11, 'devops'],
    ])(
      'starts the stage when %s is newly present on issue #%i (%s)',
      async (name, number, stage) => {
        const payload = fixtureJson('issues-label_updated.json');
        const issue = payload.issue as Record<string, unknown>;
        issue.labels = [label('enhancement'), label(name)];
        issue.number = number;
        payload.number = number;
        const id = await expectRouted(await send(toBody(payload), 'issues', 'issue_label'), stage);
        expect(await run(id)).toMatchObject({ owner: 'acme', repo: 'app', number });
      },
      120_000,
    );

    it('starts review-code for an opened and a synchronized pull request', async () => {
      const opened = await send(readFixture('pull_request-opened.json'), 'pull_request', 'pull_request');
      const id = await expectRouted(opened, 'review-code');
      expect((await run(id))?.status).not.toBe(undefined);
      expect(await run(id)).toMatchObject({ number: 8 });

      const payload = fixtureJson('pull_request-opened.json');
      payload.action = 'synchronized';
      // A push brings a new head commit (a head already acted on starts nothing again).
      const pull = payload.pull_request as { head: Record<string, unknown> };
      pull.head = { ...pull.head, sha: 'c'.repeat(40) };
      const synced = await send(toBody(payload), 'pull_request', 'pull_request_sync');
      // A second review of the same PR is merged into the first, or recorded as its follow-up.
      await expectRouted(synced, 'review-code');
      expect(synced.delivery!.runIds).toEqual([id]);
    }, 120_000);

    it('starts rework-pr for a rejected review and test for an approval', async () => {
      const rejected = readFixture('pull_request_review-rejected.json');
      await expectRouted(await send(rejected, 'pull_request_rejected', 'pull_request_review_rejected'), 'rework-pr');

      const payload = fixtureJson('pull_request_review-rejected.json');
      payload.review = { type: 'pull_request_review_approved', content: 'LGTM' };
      await expectRouted(await send(toBody(payload), 'pull_request_approved', 'pull_request_review_approved'), 'test');
    }, 120_000);

    it('queues nothing for a comment by the dev bot', async () => {
      const before = await runCount();
      const payload = fixtureJson('issue_comment-created.json');
      payload.sender = { id: 1, login: 'claude-dev', username: 'claude-dev' };
      (payload.comment as Record<string, unknown>).user = payload.sender;
      const answer = await send(toBody(payload), 'issue_comment', 'issue_comment');
      expect(answer.delivery).toMatchObject({ outcome: 'ignored', verdict: 'ignored: bot sender' });
      expect(await runCount()).toBe(before);
    }, 120_000);

    it('refuses a delivery signed with the wrong secret and queues nothing', async () => {
      const before = await runCount();
      const payload = fixtureJson('issues-opened.json');
      const issue = payload.issue as Record<string, unknown>;
      issue.number = 9;
      payload.number = 9;
      const answer = await send(toBody(payload), 'issues', 'issues', { secret: 'not-the-secret' });
      expect(answer.status).toBe(401);
      expect(answer.body).toEqual({
        error: { code: 'unauthorized', message: 'invalid signature; see docs/troubleshooting.md#signature-failures' },
      });
      expect(await runCount()).toBe(before);
    }, 120_000);

    it('runs every routed stage to success and removes every workspace', async () => {
      const settled = await until(async () => {
        const rows = await store.db.selectFrom('runs').selectAll().execute();
        // A run that finishes with a follow-up queues it in the same transaction (and keeps its
        // followup flag as a record), so "all terminal" means no follow-up is left to run.
        return rows.length > 0 && rows.every((r) => TERMINAL.includes(r.status)) ? rows : null;
      }, 'every run to finish').catch(async (err: Error) => {
        const rows = await store.db
          .selectFrom('runs')
          .select(['id', 'stage', 'status', 'followup', 'attempts', 'run_at', 'last_error'])
          .execute();
        throw new Error(`${err.message}: ${JSON.stringify(rows)}\n${server.output().slice(-6000)}`);
      });
      const failures = settled.filter((r) => r.status !== 'succeeded').map((r) => `${r.id} ${r.stage} ${r.status}: ${r.last_error}`);
      expect(failures, server.output().slice(-4000)).toEqual([]);
      expect(settled.map((r) => r.stage)).toEqual(
        expect.arrayContaining(['fix-bug', 'architect', 'develop', 'devops', 'review-code', 'rework-pr', 'test']),
      );
      // The review stages speak as the review bot, the others as the dev bot.
      await until(
        () => gitea.comments('acme', 'app', 8).filter((c) => c.body.includes('finished')).length >= 3,
        'the final comments on pull request #8',
      );
      const onPr = gitea.comments('acme', 'app', 8);
      expect(onPr.find((c) => c.body.includes('**review-code** finished'))?.author).toBe('claude-review');
      expect(onPr.find((c) => c.body.includes('**test** finished'))?.author).toBe('claude-review');
      expect(onPr.find((c) => c.body.includes('**rework-pr** finished'))?.author).toBe('claude-dev');
      await until(() => workspaceDirs().length === 0, 'every workspace to be removed').catch(async (err: Error) => {
        const teardowns = await store.db.selectFrom('teardowns').selectAll().execute();
        throw new Error(`${err.message}: ${workspaceDirs().join(', ')}\n${JSON.stringify(teardowns)}\n${server.output().slice(-6000)}`);
      });
    }, 120_000);
  });
});
