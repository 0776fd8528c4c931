import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
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
 * The agent is untrusted: a spying agent, run through the real `baton serve` (built
 * CLI, SQLite, local workspaces in real bubblewrap), tries every attack an agent on baton's host
 * found, and each fails:
 *
 * - the network: direct TCP to PostgreSQL on 127.0.0.1:5432, to baton's own port, to a loopback
 *   service and to Redis' port, to the cloud metadata address; through its egress gate a host not
 *   on the list, the database and baton's port, baton's API as `baton.internal`; the forge itself,
 *   directly (only the forge gateway leads there);
 * - the bot's tokens: in its environment, in files it can read, in every visible process's
 *   environ, cmdline and memory (`/proc`), where the runner holds CALLBACK_TOKEN too;
 * - its capability: on another repository, for the bot's other rights on its own (collaborators,
 *   a file written to the default branch through the API), for a push to the default branch and to
 *   a branch of another issue, and after the run has ended;
 * - what it reports: a negative token count and cost, which must not credit the daily budget;
 * - another run's workspace.
 *
 * Meanwhile the same run clones over git's HTTP through the forge gateway, pushes a branch of its
 * issue, comments on its issue, and reports to a host the operator allowed.
 */

const SPY = fileURLToPath(new URL('../fakes/agent/network-spy.mjs', import.meta.url));
const SECRET = 'spying-network-webhook-secret';
const DEV_TOKEN = `dev-token-${randomUUID()}`;
const REVIEW_TOKEN = `review-token-${randomUUID()}`;
const ADMIN_TOKEN = `baton_admin-${randomUUID()}`;

interface Attempt {
  target?: string;
  url?: string;
  connected?: boolean;
  status?: number;
  body?: string;
  error?: string;
}
interface Report {
  env: Record<string, string | null>;
  direct: Attempt[];
  viaProxy: Attempt[];
  viaProxyHttp: Attempt[];
  reads: { target: string; ok: boolean; error?: string }[];
  memory: { pid: number; ok: boolean; error?: string }[];
  tokens: string[];
  files: string[];
  forge: {
    api: { name: string; status: number; body: string }[];
    pushes: { name: string; ref: string; ok: boolean; output: string }[];
  };
  secrets: { found: { where: string; needle: number }[]; scanned: { processes: number; files: number; memoryBytes: number } };
}

const listen = async (server: net.Server) => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
};

/** Whether this process (outside any sandbox) can open `port` on 127.0.0.1: the control of each direct attempt. */
const reachableFromHost = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port });
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
  });

describe('the agent is untrusted: a spying agent through serve, each attack refused', () => {
  let root: string;
  let dataDir: string;
  let gitea: FakeGitea;
  let server: ServeHandle;
  let store: Store;
  let allowed: http.Server;
  let loopbackService: net.Server;
  let loopbackPort: number;
  let allowedPort: number;
  const received: Report[] = [];

  beforeAll(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-spying-network-'));
    fs.chmodSync(root, 0o711);
    dataDir = path.join(root, 'data');
    const shared = path.join(root, 'shared');
    fs.mkdirSync(shared, { recursive: true, mode: 0o755 });
    const gitConfig = path.join(shared, 'gitconfig');
    fs.writeFileSync(gitConfig, `[user]\n\tname = Spy Test\n\temail = spy@example.invalid\n[safe]\n\tdirectory = *\n`);
    allowed = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        if (req.method === 'POST') received.push(JSON.parse(body) as Report);
        res.end('allowed host answered');
      });
    });
    allowedPort = await listen(allowed);
    loopbackService = net.createServer((s) => {
      s.on('error', () => {});
      s.end('+PONG\r\n');
    });
    loopbackPort = await listen(loopbackService);

    gitea = await createFakeGitea();
    gitea.addUser('claude-dev', { token: DEV_TOKEN });
    gitea.addUser('claude-review', { token: REVIEW_TOKEN });
    gitea.addUser('alice');
    // A private repository served over git's smart HTTP by the fake forge itself.
    gitea.addRepo('acme', 'app', { private: true, git: true });
    // Only senders with write access start runs (webhooks.requireWritePermission); the bot asks as an admin.
    gitea.addCollaborator('acme', 'app', 'claude-dev', 'admin');
    gitea.addCollaborator('acme', 'app', 'alice', 'write');
    // Another repository the bot may write to: the run's capability must be worth nothing there.
    gitea.addRepo('acme', 'other', { private: true });
    gitea.addCollaborator('acme', 'other', 'claude-dev', 'admin');
    gitea.addIssue('acme', 'other', { title: 'elsewhere', author: 'alice' });
    for (let n = 1; n <= 8; n++) gitea.addIssue('acme', 'app', { title: `issue ${n}`, author: 'alice' });

    const config = path.join(root, 'baton.yaml');
    const targets = path.join(shared, 'targets.json');
    fs.writeFileSync(
      config,
      [
        'local:',
        `  readOnlyPaths: [${JSON.stringify(shared)}, ${JSON.stringify(path.dirname(SPY))}]`,
        `  gitConfig: ${JSON.stringify(gitConfig)}`,
        'egress:',
        `  allow: ["127.0.0.1:${allowedPort}"]`,
        // A daily budget a negative claim would switch off for the day.
        'budgets:',
        '  tokensPerDay: 100000',
        '  costUsdPerDay: 50',
        '',
      ].join('\n'),
    );
    server = await startServe(
      {
        HOST: '127.0.0.1',
        GITEA_URL: gitea.url,
        GITEA_DEV_TOKEN: DEV_TOKEN,
        GITEA_REVIEW_TOKEN: REVIEW_TOKEN,
        WEBHOOK_SECRET: SECRET,
        BATON_BOOTSTRAP_TOKEN: ADMIN_TOKEN,
        DATABASE_URL: `sqlite:${path.join(dataDir, 'baton.db')}`,
        BATON_DATA_DIR: dataDir,
        BATON_AGENT_COMMAND: JSON.stringify([process.execPath, SPY, '--targets', targets]),
      },
      root,
    );
    const batonPort = new URL(server.url).port;
    fs.writeFileSync(
      targets,
      JSON.stringify({
        direct: ['127.0.0.1:5432', `127.0.0.1:${batonPort}`, `127.0.0.1:${loopbackPort}`, '127.0.0.1:6379', '169.254.169.254:80'],
        viaProxy: ['example.com:443', '127.0.0.1:5432', `127.0.0.1:${batonPort}`, '169.254.169.254:80', new URL(gitea.url).host],
        viaProxyHttp: [
          'http://baton.internal/api/tokens',
          'http://baton.internal/api/runs/1/complete',
          `http://127.0.0.1:${batonPort}/api/runs`,
          'http://169.254.169.254/latest/meta-data/',
          `http://127.0.0.1:${allowedPort}/hello`,
          `${gitea.url}/api/v1/user`,
          `${gitea.url}/acme/app.git/info/refs?service=git-upload-pack`,
        ],
        paths: [path.join(dataDir, 'workspaces'), dataDir],
        reportUrl: `http://127.0.0.1:${allowedPort}/report`,
        hangIssues: ['7'],
        needles: [DEV_TOKEN, REVIEW_TOKEN, ADMIN_TOKEN, SECRET],
        forge: {
          api: [
            { name: 'other repository', method: 'GET', path: '/api/v1/repos/acme/other' },
            { name: 'other issue', method: 'POST', path: '/api/v1/repos/acme/other/issues/1/comments', body: { body: 'spy' } },
            { name: 'collaborator', method: 'PUT', path: '/api/v1/repos/acme/app/collaborators/mallory', body: { permission: 'admin' } },
            {
              name: 'file on main',
              method: 'POST',
              path: '/api/v1/repos/acme/app/contents/owned.txt',
              body: { content: Buffer.from('owned').toString('base64'), branch: 'main', message: 'owned' },
            },
            { name: 'own comment', method: 'POST', path: '/api/v1/repos/acme/app/issues/8/comments', body: { body: 'the spy was here' } },
          ],
          pushes: [
            { name: 'default branch', ref: 'refs/heads/main' },
            { name: 'another issue', ref: 'refs/heads/feature/issue-7-not-mine' },
            { name: 'own branch', ref: 'refs/heads/feature/issue-8-spy' },
          ],
        },
        usage: {
          usage: { input_tokens: -5_000_000_000, output_tokens: 7, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 },
          total_cost_usd: -1000,
        },
      }),
    );
    store = createStore({ url: `sqlite:${path.join(dataDir, 'baton.db')}` });
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
      for (const s of [allowed, loopbackService]) await new Promise<void>((resolve) => (s ? s.close(() => resolve()) : resolve()));
      fs.rmSync(root, { recursive: true, force: true });
    }
  }, 60_000);

  const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
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
    return (await acceptedDelivery(store, answer, { body, headers })).runIds[0]!;
  };
  const run = (id: number) => store.db.selectFrom('runs').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

  it('/ready proves the gate: from a throw-away sandbox baton and its database do not connect', async () => {
    const check = await until(async () => {
      const res = await fetch(`${server.url}/ready`, { headers: admin });
      // A loaded machine's token lookup can miss the probe's budget: the answer then names the failing checks only.
      const body = (await res.json()) as { checks?: { name: string; ok: boolean; error?: string }[] };
      const c = body.checks?.find((x) => x.name === 'provider local');
      return c && !c.error?.includes('checking the sandbox') ? c : null;
    }, 'the local provider check');
    expect(check).toMatchObject({ ok: true });
  }, 120_000);

  it('refuses every attack, while the run clones, pushes its branch, comments on its issue and reaches its allowed host', async () => {
    const batonPort = new URL(server.url).port;
    const victim = await open(7);
    await until(async () => (await run(victim)).status === 'running', 'the victim run to be running');
    const spy = await open(8);
    const done = await until(async () => {
      const row = await run(spy);
      return ['succeeded', 'failed', 'timed_out', 'dead'].includes(row.status) ? row : null;
    }, 'the spy run to finish');
    expect(done, `${done.last_error}\n${server.output().slice(-3000)}`).toMatchObject({ status: 'succeeded' });
    // Its report went out through the gate, to the one extra host the operator listed.
    const report = await until(() => received[0], 'the spy report');
    expect(done.summary).toBe('spy reported: 200');

    // It cloned the forge's repository over git's HTTP, through the forge gateway (the bot's token
    // added there, outside the sandbox).
    expect(report.files).toContain('README.md');
    expect(report.env.GITEA_URL).toBe('http://baton.internal/gateway');
    expect(gitea.requests).toContainEqual(expect.objectContaining({ path: '/acme/app.git/info/refs', auth: 'basic', status: 200 }));
    expect(report.env.HTTPS_PROXY).toBe('http://127.0.0.1:3128');

    // Direct TCP reaches nothing of the host: only the run's own loopback exists.
    for (const attempt of report.direct) expect(attempt, attempt.target).toMatchObject({ connected: false });
    // The controls: from outside the sandbox these listen (the database where this machine runs one).
    expect(await reachableFromHost(Number(batonPort))).toBe(true);
    expect(await reachableFromHost(loopbackPort)).toBe(true);

    // Through the gate: what is not on the list is refused, saying why.
    const via = (target: string) => report.viaProxy.find((a) => a.target === target)!;
    expect(via('example.com:443')).toMatchObject({ status: 403, body: expect.stringContaining("not on this run's allow-list") });
    expect(via('127.0.0.1:5432').status).toBe(403);
    expect(via(`127.0.0.1:${batonPort}`).status).toBe(403);
    expect(via('169.254.169.254:80').status).toBe(403);
    const http = (url: string) => report.viaProxyHttp.find((a) => a.url === url)!;
    expect(http('http://baton.internal/api/tokens')).toMatchObject({
      status: 403,
      body: expect.stringContaining('not a path runs may use'),
    });
    // Another run's callback is not this run's path.
    expect(http('http://baton.internal/api/runs/1/complete').status).toBe(403);
    expect(http(`http://127.0.0.1:${batonPort}/api/runs`).status).toBe(403);
    expect(http('http://169.254.169.254/latest/meta-data/').status).toBe(403);
    // The forge is not on the list: its API and its git are reached only through the gateway.
    expect(via(new URL(gitea.url).host)).toMatchObject({ status: 403, body: expect.stringContaining("not on this run's allow-list") });
    expect(http(`${gitea.url}/api/v1/user`).status).toBe(403);
    expect(http(`${gitea.url}/acme/app.git/info/refs?service=git-upload-pack`).status).toBe(403);
    expect(http(`http://127.0.0.1:${allowedPort}/hello`)).toMatchObject({ status: 200, body: 'allowed host answered' });

    // Other runs and the runner's memory stay out of reach.
    for (const read of report.reads) expect(read, read.target).toMatchObject({ ok: false, error: 'ENOENT' });
    expect(report.tokens).toEqual([]);
    expect((await run(victim)).status).toBe('running');

    // Each refusal is a line in the run's log and counted.
    const view = (await (await fetch(`${server.url}/api/runs/${spy}`, { headers: admin })).json()) as { log: string };
    expect(view.log).toContain("[baton] egress refused: CONNECT example.com:443: not on this run's allow-list");
    expect(view.log).toContain('[baton] egress refused: GET http://baton.internal/api/tokens');
    const metrics = await (await fetch(`${server.url}/metrics`, { headers: admin })).text();
    const refused = Number(/^baton_egress_refused_total (\d+)/m.exec(metrics)?.[1]);
    expect(refused).toBeGreaterThanOrEqual(8);

    // The bots' tokens, baton's admin token and the webhook secret are nowhere it can read: not in
    // its environment, files, any visible process's environ, cmdline or memory. (The search ran:
    // it read processes, files and memory, and its own capability is in its environment.)
    expect(report.secrets.found).toEqual([]);
    expect(report.secrets.scanned.processes).toBeGreaterThan(0);
    expect(report.secrets.scanned.files).toBeGreaterThan(0);
    expect(report.secrets.scanned.memoryBytes).toBeGreaterThan(0);
    const capability = report.env.GITEA_TOKEN!;
    expect(capability).toMatch(/^bgw_\d+_/);
    for (const secret of [DEV_TOKEN, REVIEW_TOKEN, ADMIN_TOKEN]) expect(JSON.stringify(report)).not.toContain(secret);

    // Its capability: nothing on another repository, none of the bot's other rights on its own.
    const api = (name: string) => report.forge.api.find((a) => a.name === name)!;
    expect(api('other repository')).toMatchObject({ status: 403, body: expect.stringContaining("outside this run's repository acme/app") });
    expect(api('other issue').status).toBe(403);
    expect(gitea.comments('acme', 'other', 1)).toEqual([]);
    expect(api('collaborator')).toMatchObject({ status: 403, body: expect.stringContaining('not a change runs may make') });
    expect(api('file on main').status).toBe(403);
    // Pushes: never the default branch, never another issue's branch; its own goes through.
    const bare = gitea.gitDir('acme', 'app');
    const branch = (name: string) => {
      try {
        return execFileSync('git', ['--git-dir', bare, 'rev-parse', '--verify', '-q', `refs/heads/${name}`], { encoding: 'utf8' }).trim();
      } catch {
        return null;
      }
    };
    const push = (name: string) => report.forge.pushes.find((p) => p.name === name)!;
    expect(push('default branch'), push('default branch').output).toMatchObject({ ok: false });
    expect(push('default branch').output).toContain('a push to the default branch main');
    expect(push('another issue'), push('another issue').output).toMatchObject({ ok: false });
    expect(push('another issue').output).toContain('may push only a branch naming issue #8');
    expect(branch('feature/issue-7-not-mine')).toBeNull();
    expect(execFileSync('git', ['--git-dir', bare, 'log', '--format=%s', 'main'], { encoding: 'utf8' })).not.toContain('spy');
    expect(push('own branch'), push('own branch').output).toMatchObject({ ok: true });
    expect(execFileSync('git', ['--git-dir', bare, 'log', '-1', '--format=%s', 'feature/issue-8-spy'], { encoding: 'utf8' }).trim()).toBe(
      'spy',
    );
    // It comments on its own issue, as the bot (the gateway added the bot's token).
    expect(api('own comment').status).toBe(201);
    expect(gitea.comments('acme', 'app', 8)).toContainEqual(expect.objectContaining({ author: 'claude-dev', body: 'the spy was here' }));
    expect(view.log).toContain('[gateway] refused: a push to the default branch main');
    expect(view.log).toContain("[gateway] refused: GET /api/v1/repos/acme/other is outside this run's repository acme/app");

    // Its run has ended: the capability is worth nothing now, even on its own repository.
    const after = await fetch(`${server.url}/gateway/api/v1/repos/acme/app`, { headers: { authorization: `token ${capability}` } });
    expect(after.status).toBe(401);

    // It claimed -5,000,000,000 input tokens and -$1,000: refused, counted as 0, the budget not credited.
    expect(view.log).toMatch(/\[baton\] refused result usage\.input_tokens = -5000000000 from the workspace: .* counts as 0/);
    expect(view.log).toMatch(/\[baton\] refused result\.total_cost_usd = -1000 from the workspace/);
    const stored = await run(spy);
    const usage = JSON.parse(stored.usage ?? '{}') as { inputTokens?: number; outputTokens?: number };
    expect(usage.inputTokens ?? 0).toBe(0);
    expect(usage.outputTokens).toBe(7);
    expect(stored.cost_usd ?? 0).toBeGreaterThanOrEqual(0);
    const budgets = (await (await fetch(`${server.url}/api/budgets`, { headers: admin })).json()) as {
      budgets: { scope: string; tokens: { used: number }; costUsd: { used: number } }[];
    };
    const global = budgets.budgets.find((b) => b.scope === 'global')!;
    expect(global.tokens.used).toBeGreaterThanOrEqual(7);
    expect(global.costUsd.used).toBeGreaterThanOrEqual(0);

    await fetch(`${server.url}/api/runs/${victim}/cancel`, { method: 'POST', headers: admin });
    await until(async () => (await run(victim)).status === 'cancelled', 'the victim to be cancelled');
  }, 180_000);
});
