import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createStore, type Store } from '../../src/store/index.js';
import { createBareRepo } from '../fakes/agent/git-repos.js';
import { createFakeGitea, type FakeGitea } from '../fakes/gitea/index.js';
import { startServe, type ServeHandle } from '../helpers/baton-bin.js';
import { fixtureJson, giteaHeaders, toBody } from '../helpers/gitea-webhook.js';
import { until } from '../helpers/until.js';
import { acceptedDelivery } from '../helpers/deliveries.js';

/**
 * Against the real `baton serve` (built CLI, SQLite, local workspaces in bubblewrap):
 * the spy agent of one run tries to read the server's environment (every bot token), the
 * database and config file, the other run's workspace and token, to write to the database and
 * to report the other run as succeeded. Then what an operator sees when the sandbox cannot work:
 * runs refused with the reason and `/ready` saying why, and the warning of `local.sandbox: none`.
 */

const SPY = fileURLToPath(new URL('../fakes/agent/spy-agent.mjs', import.meta.url));
const FAKE_CLAUDE = fileURLToPath(new URL('../fakes/agent/fake-claude.mjs', import.meta.url));
const SECRET = 'serve-sandbox-webhook-secret';
const DEV_TOKEN = `dev-token-${randomUUID()}`;
const REVIEW_TOKEN = `review-token-${randomUUID()}`;
const ADMIN_TOKEN = `baton_admin-${randomUUID()}`;
const CLAUDE_TOKEN = `claude-oauth-${randomUUID()}`;

interface Report {
  uid: number;
  env: string[];
  processes: { pid: number; cmdline: string }[];
  reads: { target: string; ok: boolean; error?: string; text?: string }[];
  writes: { target: string; ok: boolean; error?: string }[];
  tokens: string[];
  callbacks: { url: string; status?: number }[];
}

interface Readiness {
  /** Only for a caller whose token was checked within the probe's budget (a loaded machine may not). */
  checks?: { name: string; ok: boolean; error?: string }[];
}

async function readiness(url: string): Promise<{ status: number; body: Readiness }> {
  // With a token: why a check fails is said only to operators.
  const res = await fetch(`${url}/ready`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  return { status: res.status, body: (await res.json()) as Readiness };
}

/** The provider's check once it has run (the first answers say it is still checking). */
async function providerCheck(url: string) {
  return until(async () => {
    const { status, body } = await readiness(url);
    const check = body.checks?.find((c) => c.name === 'provider local');
    return check && !check.error?.includes('checking the sandbox') ? { status, check } : null;
  }, 'the local provider check');
}

describe('baton serve with sandboxed local workspaces, attacked by an agent', () => {
  let root: string;
  let dataDir: string;
  let gitea: FakeGitea;
  let server: ServeHandle;
  let store: Store;
  let reports: http.Server;
  const received: Report[] = [];

  beforeAll(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-serve-sandbox-'));
    fs.chmodSync(root, 0o711);
    dataDir = path.join(root, 'data');
    const shared = path.join(root, 'shared');
    fs.mkdirSync(path.join(shared, 'acme'), { recursive: true, mode: 0o755 });
    createBareRepo(path.join(shared, 'acme'), 'app');
    const gitConfig = path.join(shared, 'gitconfig');
    fs.writeFileSync(
      gitConfig,
      `[user]\n\tname = Spy Test\n\temail = spy@example.invalid\n[url "file://${shared}/"]\n\tinsteadOf = http://gitea.test/\n\tinsteadOf = http://baton.internal/gateway/\n[safe]\n\tdirectory = *\n`,
    );
    reports = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        received.push(JSON.parse(body) as Report);
        res.end();
      });
    });
    await new Promise<void>((resolve) => reports.listen(0, '127.0.0.1', resolve));

    gitea = await createFakeGitea();
    gitea.addUser('claude-dev', { token: DEV_TOKEN });
    gitea.addUser('claude-review', { token: REVIEW_TOKEN });
    gitea.addUser('alice');
    gitea.addRepo('acme', 'app');
    // Only senders with write access start runs (webhooks.requireWritePermission); the bot asks as an admin.
    gitea.addCollaborator('acme', 'app', 'claude-dev', 'admin');
    gitea.addCollaborator('acme', 'app', 'alice', 'write');
    for (let n = 1; n <= 8; n++) gitea.addIssue('acme', 'app', { title: `issue ${n}`, author: 'alice' });

    const database = path.join(dataDir, 'baton.db');
    const config = path.join(root, 'baton.yaml');
    const targets = path.join(shared, 'targets.json');
    fs.writeFileSync(
      config,
      `local:\n  readOnlyPaths: [${JSON.stringify(shared)}, ${JSON.stringify(path.dirname(SPY))}]\n  gitConfig: ${JSON.stringify(gitConfig)}\n` +
        // The one host the spy may reach through its gate: where it sends its report.
        `egress:\n  allow: ["127.0.0.1:${(reports.address() as AddressInfo).port}"]\n`,
    );
    server = await startServe(
      {
        HOST: '127.0.0.1',
        GITEA_URL: gitea.url,
        // Where workspaces clone from; the gitconfig above sends it to the shared bare repositories.
        GITEA_CLONE_URL: 'http://gitea.test',
        GITEA_DEV_TOKEN: DEV_TOKEN,
        GITEA_REVIEW_TOKEN: REVIEW_TOKEN,
        CLAUDE_OAUTH_TOKEN: CLAUDE_TOKEN,
        WEBHOOK_SECRET: SECRET,
        BATON_BOOTSTRAP_TOKEN: ADMIN_TOKEN,
        DATABASE_URL: `sqlite:${database}`,
        BATON_DATA_DIR: dataDir,
        BATON_AGENT_COMMAND: JSON.stringify([process.execPath, SPY, '--targets', targets]),
      },
      root,
    );
    fs.writeFileSync(
      targets,
      JSON.stringify({
        pids: [server.process.pid],
        paths: [dataDir, database, config, path.join(dataDir, 'workspaces')],
        writable: [database],
        callbackUrls: [1, 2, 3].map((id) => `${server.url}/api/runs/${id}/complete`),
        reportUrl: `http://127.0.0.1:${(reports.address() as AddressInfo).port}/`,
        hangIssues: ['7'],
        inspect: dataDir,
      }),
    );
    await until(async () => (await readiness(server.url).catch(() => null))?.status === 200, 'baton serve to be ready');
    store = createStore({ url: `sqlite:${database}` });
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
      await new Promise<void>((resolve) => (reports ? reports.close(() => resolve()) : resolve()));
      fs.rmSync(root, { recursive: true, force: true });
    }
  }, 60_000);

  const open = async (number: number) => {
    const payload = fixtureJson('issues-opened.json') as { issue: { number: number; title: string } };
    payload.issue.number = number;
    payload.issue.title = `issue ${number}`;
    const body = toBody(payload);
    const headers = giteaHeaders(body, { event: 'issues', eventType: 'issues', secret: SECRET });
    const res = await fetch(`${server.url}/webhook/gitea`, {
      method: 'POST',
      headers,
      body,
    });
    const answer = (await res.json()) as { id?: number; spooled?: boolean };
    expect(res.status, JSON.stringify(answer)).toBe(202);
    // Accepting only stores the delivery; the inbox worker starts the run.
    return (await acceptedDelivery(store, answer, { body, headers })).runIds[0]!;
  };
  const run = (id: number) => store.db.selectFrom('runs').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

  it("cannot read the server's secrets, the database or another run, and cannot report another run", async () => {
    const victim = await open(7);
    await until(async () => (await run(victim)).status === 'running', 'the victim run to be running');
    // Its agent is up: its runner holds the callback token.
    const victimLog = path.join(dataDir, 'workspaces', (await run(victim)).workspace_name!, 'runner.log');
    await until(() => fs.existsSync(victimLog) && fs.readFileSync(victimLog, 'utf8').includes('[init]'), 'the victim agent to start');
    const spy = await open(8);
    const done = await until(async () => {
      const row = await run(spy);
      return ['succeeded', 'failed', 'timed_out', 'dead'].includes(row.status) ? row : null;
    }, 'the spy run to finish');
    expect(done, `${done.last_error}\n${server.output().slice(-3000)}`).toMatchObject({ status: 'succeeded', summary: 'spy finished' });
    const report = await until(() => received[0], 'the spy report');

    expect(report.uid).not.toBe(0);
    expect(report.env).not.toContain('CALLBACK_TOKEN');
    // The dev bot's token is its stage's own (its agent comments with it); every other secret of
    // the server stays out of reach.
    const seen = JSON.stringify({ reads: report.reads, tokens: report.tokens, processes: report.processes });
    for (const secret of [REVIEW_TOKEN, ADMIN_TOKEN, SECRET]) expect(seen).not.toContain(secret);
    expect(report.reads.find((r) => r.target === `/proc/${server.process.pid}/environ`)?.ok).toBe(false);
    for (const target of [dataDir, path.join(dataDir, 'baton.db'), path.join(root, 'baton.yaml'), path.join(dataDir, 'workspaces')]) {
      expect(
        report.reads.find((r) => r.target === target),
        target,
      ).toMatchObject({ ok: false, error: 'ENOENT' });
    }
    expect(report.writes).toEqual([{ target: path.join(dataDir, 'baton.db'), ok: false, error: 'ENOENT' }]);
    expect(report.tokens).toEqual([]);
    // The victim is still the runner's to report; the database holds only the admin token.
    expect((await run(victim)).status).toBe('running');
    expect(await store.db.selectFrom('api_tokens').select('name').execute()).toEqual([{ name: 'admin' }]);

    const cancel = await fetch(`${server.url}/api/runs/${victim}/cancel`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(cancel.status).toBe(200);
    await until(
      () => !fs.existsSync(path.join(dataDir, 'workspaces')) || fs.readdirSync(path.join(dataDir, 'workspaces')).length === 0,
      'every workspace to be removed',
    );
  }, 120_000);
});

describe('baton serve when runs cannot be sandboxed', () => {
  let root: string;
  let server: ServeHandle | undefined;

  afterEach(async () => {
    if (server) {
      const code = await server.stop('SIGTERM');
      server = undefined;
      expect(code).toBe(0);
    }
    fs.rmSync(root, { recursive: true, force: true });
  });

  const start = async (env: Record<string, string>, file = '') => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-no-sandbox-'));
    fs.chmodSync(root, 0o711);
    fs.writeFileSync(path.join(root, 'baton.yaml'), file);
    server = await startServe(
      {
        HOST: '127.0.0.1',
        BATON_BOOTSTRAP_TOKEN: ADMIN_TOKEN,
        DATABASE_URL: `sqlite:${path.join(root, 'baton.db')}`,
        BATON_DATA_DIR: path.join(root, 'data'),
        WEBHOOK_SECRET: SECRET,
        ...env,
      },
      root,
    );
    return server;
  };

  it('without bubblewrap: /ready says why, and a run is refused with the same reason', async () => {
    // A PATH without bwrap (node itself is started by its absolute path).
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-empty-path-'));
    try {
      const s = await start({ PATH: empty }, 'queue:\n  maxAttempts: 1\n');
      const { status, check } = await providerCheck(s.url);
      expect(status).toBe(503);
      expect(check.error).toMatch(
        /^local provider: bubblewrap \("bwrap"\) is not installed or not on baton's PATH .*install the bubblewrap package \(see docs\/troubleshooting\.md#sandbox-setup\), or set local.sandbox: none/,
      );

      const body = toBody(fixtureJson('issues-opened.json'));
      const headers = giteaHeaders(body, { event: 'issues', eventType: 'issues', secret: SECRET });
      const res = await fetch(`${s.url}/webhook/gitea`, {
        method: 'POST',
        headers,
        body,
      });
      expect(res.status).toBe(202);
      // The inbox worker starts the run after the 202: find it by its issue.
      const runId = await until(async () => {
        const list = (await (
          await fetch(`${s.url}/api/runs?repo=acme/app&number=7`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
        ).json()) as { runs: Array<{ id: number }> };
        return list.runs[0]?.id;
      }, 'the run the delivery started');
      const dead = await until(async () => {
        const r = (await (await fetch(`${s.url}/api/runs/${runId}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json()) as {
          run: { status: string; lastError: string | null };
        };
        return r.run.status === 'dead' ? r.run : null;
      }, 'the run to be refused');
      expect(dead.lastError).toContain('bubblewrap ("bwrap") is not installed');
      expect(fs.existsSync(path.join(root, 'data', 'workspaces')) ? fs.readdirSync(path.join(root, 'data', 'workspaces')) : []).toEqual([]);
    } finally {
      fs.rmSync(empty, { recursive: true, force: true });
    }
  }, 60_000);

  it('without the agent command where runs look for it: /ready names it', async () => {
    // As under a service manager: node_modules/.bin (where npm puts claude) is not on the PATH.
    const s = await start({ PATH: '/usr/local/bin:/usr/bin:/bin' });
    const { status, check } = await providerCheck(s.url);
    expect(status).toBe(503);
    expect(check.error).toBe(
      'local provider: agent command "claude" (Claude Code, agent claude) is not found on the runner\'s PATH (/usr/local/bin:/usr/bin:/bin): install Claude Code where the runner finds it (npm install -g @anthropic-ai/claude-code), or set agents.claude.command (or BATON_AGENT_COMMAND) to its absolute path',
    );
  }, 60_000);

  it('with local.sandbox: none: warns at start, and checks the agent command all the same', async () => {
    const s = await start({ BATON_AGENT_COMMAND: JSON.stringify([process.execPath, FAKE_CLAUDE]) }, 'local:\n  sandbox: none\n');
    const { status, check } = await providerCheck(s.url);
    expect(status).toBe(200);
    expect(check.ok).toBe(true);
    const warning = s
      .output()
      .split('\n')
      .find((line) => line.includes('local.sandbox is none'));
    expect(JSON.parse(warning ?? '{}')).toMatchObject({ level: 40, msg: expect.stringContaining('local runs are NOT isolated') });
  }, 60_000);
});
