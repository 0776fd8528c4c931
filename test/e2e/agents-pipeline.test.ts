import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStore, type Store } from '../../src/store/index.js';
import { git } from '../fakes/agent/git-repos.js';
import { createFakeGitea, type FakeGitea } from '../fakes/gitea/index.js';
import { startServe, type ServeHandle } from '../helpers/baton-bin.js';
import { fixtureJson, giteaHeaders, toBody } from '../helpers/gitea-webhook.js';
import { until } from '../helpers/until.js';
import { acceptedDelivery } from '../helpers/deliveries.js';
import type { Delivery } from '../../src/ingress/index.js';

/**
 * One issue through two vendors' agents, through the real `baton serve`: analyse runs on Gemini
 * CLI, then develop on Codex CLI, whose run does what develop must (the stage's default success,
 * `pushed`): it commits on the issue's branch, pushes it through baton's forge gateway to the
 * fake Gitea's own git over HTTP and opens a pull request through the gateway's API, and baton
 * checks that on the forge before it records the run as succeeded.
 */

const FAKES = path.dirname(fileURLToPath(new URL('../fakes/agent/fake-codex.mjs', import.meta.url)));
const fake = (name: string) => [process.execPath, path.join(FAKES, `fake-${name}.mjs`)];
const SECRET = 'e2e-agents-pipeline-secret';
const DEV_TOKEN = 'e2e-agents-pipeline-dev-token-0123';
const REVIEW_TOKEN = 'e2e-agents-pipeline-review-token-0123';
const TERMINAL = ['succeeded', 'failed', 'timed_out', 'cancelled', 'dead'];

describe('baton serve: analyse on Gemini CLI, develop on Codex CLI, one issue', () => {
  let root: string;
  let gitea: FakeGitea;
  let server: ServeHandle;
  let store: Store;

  beforeAll(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-e2e-agents-pipeline-'));
    fs.chmodSync(root, 0o711);
    fs.writeFileSync(
      path.join(root, 'baton.yaml'),
      `local:\n  readOnlyPaths: [${JSON.stringify(FAKES)}]\n` +
        'agents:\n' +
        `  codex: { command: ${JSON.stringify(fake('codex'))}, model: gpt-5-codex }\n` +
        `  gemini: { command: ${JSON.stringify(fake('gemini'))}, model: gemini-2.5-flash }\n` +
        'pipeline:\n  stages:\n    analyse: { agent: gemini }\n    develop: { agent: codex }\n',
    );
    gitea = await createFakeGitea();
    gitea.addUser('claude-dev', { token: DEV_TOKEN });
    gitea.addUser('claude-review', { token: REVIEW_TOKEN });
    gitea.addUser('alice');
    // A real repository behind the fake's git HTTP: runs clone and push it through the gateway.
    gitea.addRepo('acme', 'app', { git: { develop: { '.fake-agent.json': JSON.stringify({ modeByIssue: { '1': 'develop' } }) } } });
    gitea.addIssue('acme', 'app', { title: 'Add the export', author: 'alice' });
    gitea.addCollaborator('acme', 'app', 'claude-dev', 'admin');
    gitea.addCollaborator('acme', 'app', 'alice', 'write');

    server = await startServe(
      {
        HOST: '127.0.0.1',
        GITEA_URL: gitea.url,
        GITEA_DEV_TOKEN: DEV_TOKEN,
        GITEA_REVIEW_TOKEN: REVIEW_TOKEN,
        WEBHOOK_SECRET: SECRET,
        DATABASE_URL: `sqlite:${path.join(root, 'baton.db')}`,
        BATON_DATA_DIR: path.join(root, 'data'),
        BATON_CODEX_API_KEY: 'sk-proj-e2e-pipeline-codex',
        BATON_GEMINI_API_KEY: 'AIza-e2e-pipeline-gemini',
      },
      root,
    );
    store = createStore({ url: `sqlite:${path.join(root, 'baton.db')}` });
  }, 60_000);

  afterAll(async () => {
    try {
      await server?.stop('SIGTERM');
    } finally {
      await store?.close();
      await gitea?.close();
      fs.rmSync(root, { recursive: true, force: true });
    }
  }, 60_000);

  async function send(payload: unknown, event: string, eventType = event): Promise<Delivery> {
    const body = toBody(payload);
    const headers = giteaHeaders(body, { event, eventType, secret: SECRET, delivery: randomUUID() });
    const res = await fetch(`${server.url}/webhook/gitea`, { method: 'POST', headers, body });
    const answer = (await res.json()) as { id?: number; spooled?: boolean };
    expect(res.status, JSON.stringify(answer)).toBe(202);
    return acceptedDelivery(store, answer, { body, headers });
  }
  const finished = (id: number) =>
    until(async () => {
      const row = await store.db.selectFrom('runs').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
      return TERMINAL.includes(row.status) ? row : null;
    }, `run ${id} to end`);
  const finalComment = (stage: string) =>
    until(
      () => gitea.comments('acme', 'app', 1).find((c) => c.author === 'claude-dev' && c.body.includes(`**${stage}** finished`)),
      `the final comment of ${stage}`,
    );

  it('analyses on Gemini CLI, then develops on Codex CLI: a pushed branch and a pull request, checked on the forge', async () => {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a webhook body
    const opened = fixtureJson('issues-opened.json') as Record<string, any>;
    opened.issue = { ...opened.issue, number: 1, title: 'Add the export', labels: [] };
    const first = await send(opened, 'issues');
    expect(first).toMatchObject({ outcome: 'started', stages: ['analyse'] });
    const analysed = await finished(first.runIds[0]!);
    expect(analysed, `${analysed.last_error}: ${analysed.summary}\n${server.output().slice(-3000)}`).toMatchObject({
      status: 'succeeded',
      cost_source: 'computed',
    });
    expect(analysed.summary).toContain('Gemini: done with');
    expect((await finalComment('analyse')).body).toContain('tokens 6,144 in + 12,288 cached / 912 out');

    // The analysis read, someone marks the issue ready for development.
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a webhook body
    const labelled = fixtureJson('issues-label_updated.json') as Record<string, any>;
    labelled.number = 1;
    labelled.issue = {
      ...labelled.issue,
      number: 1,
      state: 'open',
      labels: [{ id: 1, name: 'ready-for-development', color: '0e8a16', description: '', exclusive: false, is_archived: false, url: '' }],
    };
    const second = await send(labelled, 'issues', 'issue_label');
    expect(second).toMatchObject({ outcome: 'started', stages: ['develop'] });
    const developed = await finished(second.runIds[0]!);
    expect(developed, `${developed.last_error}: ${developed.summary}\n${server.output().slice(-3000)}`).toMatchObject({
      status: 'succeeded',
      stage: 'develop',
      cost_source: 'computed',
    });
    expect(developed.summary).toContain('Codex: done with');

    // What the outcome check saw: the branch on the forge's repository, and a pull request from it.
    const pushed = git(gitea.gitDir('acme', 'app'), 'log', '-1', '--format=%s', 'refs/heads/feature/issue-1-codex');
    expect(pushed).toBe('Work for the issue');
    const pulls = (await (
      await fetch(`${gitea.url}/api/v1/repos/acme/app/pulls`, { headers: { authorization: `token ${DEV_TOKEN}` } })
    ).json()) as Array<{
      head: { ref: string };
      base: { ref: string };
      user: { login: string };
    }>;
    expect(pulls).toEqual([expect.objectContaining({ head: expect.objectContaining({ ref: 'feature/issue-1-codex' }) })]);
    expect(pulls[0]).toMatchObject({ base: { ref: 'develop' }, user: { login: 'claude-dev' } });
    const comment = await finalComment('develop');
    expect(comment.body).toContain('tokens 315 in + 24,448 cached / 1,220 out');
    expect(comment.body).toContain('cost $0.02 (computed from tokens)');
  }, 120_000);
});
