import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStore, type Store } from '../../src/store/index.js';
import { createFakeGitea, type FakeGitea } from '../fakes/gitea/index.js';
import { startServe, type ServeHandle } from '../helpers/baton-bin.js';
import { acceptedDelivery } from '../helpers/deliveries.js';
import { fixtureJson, giteaHeaders, toBody } from '../helpers/gitea-webhook.js';
import { until } from '../helpers/until.js';

/**
 * A forge outage during the clones, through the real `baton serve` (local workspaces, the real
 * `baton agent` and git, through baton's forge gateway to the fake Gitea's git smart HTTP): while
 * the forge answers every git request with 500 every run's clone fails; each is tried again in a
 * fresh workspace at the queue's pace, and once the forge is back every run succeeds within its
 * attempts, with the outage on its timeline.
 */

const FAKE_CLAUDE = fileURLToPath(new URL('../fakes/agent/fake-claude.mjs', import.meta.url));
const SECRET = 'clone-outage-webhook-secret';
const DEV_TOKEN = `dev-token-${randomUUID()}`;
const REVIEW_TOKEN = `review-token-${randomUUID()}`;
const TERMINAL = ['succeeded', 'failed', 'timed_out', 'cancelled', 'dead'];
const ISSUES = [1, 2, 3, 4];
const GIT_PATHS = /^\/acme\/app(\.git)?\/(info\/refs|git-upload-pack)$/;

describe('baton serve: a forge outage during the clones', () => {
  let root: string;
  let gitea: FakeGitea;
  let server: ServeHandle;
  let store: Store;

  beforeAll(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-clone-outage-'));
    // Runs are sandboxed as nobody when this suite runs as root: it must reach the workspaces.
    fs.chmodSync(root, 0o711);
    gitea = await createFakeGitea();
    gitea.addUser('claude-dev', { token: DEV_TOKEN });
    gitea.addUser('claude-review', { token: REVIEW_TOKEN });
    gitea.addUser('alice');
    // A private repository: every git request needs the bot's token, which the gateway adds.
    gitea.addRepo('acme', 'app', { git: true, private: true });
    // Senders need write access (checked by default), which the dev bot asks as repository admin.
    gitea.addCollaborator('acme', 'app', 'claude-dev', 'admin');
    gitea.addCollaborator('acme', 'app', 'alice', 'write');
    for (const n of ISSUES) gitea.addIssue('acme', 'app', { title: `issue ${n}`, author: 'alice' });
    const home = path.join(root, 'home');
    fs.mkdirSync(home);
    const gitConfig = path.join(home, '.gitconfig');
    fs.writeFileSync(gitConfig, '[user]\n\tname = Baton Test\n\temail = baton-test@example.invalid\n');
    fs.writeFileSync(
      path.join(root, 'baton.yaml'),
      [
        `local:\n  readOnlyPaths: [${JSON.stringify(path.dirname(FAKE_CLAUDE))}]\n  gitConfig: ${JSON.stringify(gitConfig)}`,
        // Retries of a clone the forge refused: 0.2 s, doubling, at most 2 s apart: on a loaded machine
        // the outage lasts many retries, and the default cap (600 s) would outwait the test.
        'queue:\n  backoffBaseSeconds: 0.2\n  backoffMaxSeconds: 2',
        '',
      ].join('\n'),
    );
    server = await startServe(
      {
        HOME: home,
        HOST: '127.0.0.1',
        GITEA_URL: gitea.url,
        GITEA_DEV_TOKEN: DEV_TOKEN,
        GITEA_REVIEW_TOKEN: REVIEW_TOKEN,
        WEBHOOK_SECRET: SECRET,
        DATABASE_URL: `sqlite:${path.join(root, 'baton.db')}`,
        BATON_DATA_DIR: path.join(root, 'data'),
        QUEUE_CONCURRENCY: String(ISSUES.length),
        AGENT_RUN_ATTEMPTS: '6',
        BATON_AGENT_COMMAND: JSON.stringify([process.execPath, FAKE_CLAUDE]),
      },
      root,
    );
    store = createStore({ url: `sqlite:${path.join(root, 'baton.db')}` });
  }, 60_000);

  afterAll(async () => {
    try {
      if (server) {
        const code = await server.stop('SIGTERM');
        if (code !== 0) throw new Error(`baton serve exited with ${code}:\n${server.output()}`);
      }
    } finally {
      await store?.close();
      await gitea?.close();
      fs.rmSync(root, { recursive: true, force: true });
    }
  }, 60_000);

  it('ends every run succeeded once the forge is back, each retried in a fresh workspace with the reason', async () => {
    // Every git request (info/refs, upload-pack) answers 500 until the forge is back.
    gitea.failNext(Number.MAX_SAFE_INTEGER, { path: GIT_PATHS });
    const runIds: number[] = [];
    for (const number of ISSUES) {
      const payload = fixtureJson('issues-opened.json') as { issue: { number: number }; number?: number };
      payload.issue.number = number;
      payload.number = number;
      const body = toBody(payload);
      const headers = giteaHeaders(body, { event: 'issues', eventType: 'issues', secret: SECRET });
      const res = await fetch(`${server.url}/webhook/gitea`, {
        method: 'POST',
        headers,
        body,
      });
      const answer = (await res.json()) as { id?: number; spooled?: boolean };
      expect(res.status).toBe(202);
      const delivery = await acceptedDelivery(store, answer, { body, headers });
      expect(delivery).toMatchObject({ outcome: 'started' });
      runIds.push(delivery.runIds[0]!);
    }
    // Every run has met the outage at least once before the forge comes back.
    await until(async () => {
      const retried = await store.db.selectFrom('run_events').select('run_id').where('type', '=', 'run:retrying').distinct().execute();
      return retried.length === ISSUES.length;
    }, 'each run to be retried after a refused clone');
    gitea.clearFaults();

    for (const id of runIds) {
      const done = await until(async () => {
        const row = await store.db.selectFrom('runs').selectAll().where('id', '=', id).executeTakeFirst();
        return row && TERMINAL.includes(row.status) ? row : null;
      }, `run ${id} to finish`);
      expect(done, `${done.last_error}\n${server.output()}`).toMatchObject({ status: 'succeeded' });
      expect(done.agent_attempt).toBeGreaterThan(1);
      expect(done.agent_attempt).toBeLessThanOrEqual(6);
      const retries = await store.db
        .selectFrom('run_events')
        .select('data')
        .where('run_id', '=', id)
        .where('type', '=', 'run:retrying')
        .execute();
      for (const r of retries) expect(JSON.parse(r.data ?? '{}')).toMatchObject({ error: 'clone_unavailable' });
    }
    const refused = gitea.requests.filter((r) => GIT_PATHS.test(r.path) && r.status === 500);
    expect(refused.length).toBeGreaterThanOrEqual(ISSUES.length);
  });
});
