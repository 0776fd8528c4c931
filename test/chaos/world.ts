/**
 * The world a chaos scenario runs in: the built `baton serve` (one or more replicas) on SQLite or
 * PostgreSQL, local workspaces in real bubblewrap sandboxes running the real `baton agent` with a
 * fake `claude` (test/fakes/agent/chaos-agent.mjs, its behaviour chosen per issue), a fake Gitea
 * receiving the status comments, and signed webhooks as Gitea sends them.
 *
 * Everything a scenario checks is what a user could see: the Runs API, the comments on the forge,
 * the processes in /proc and the workspace directories. Nothing here reads baton's tables, so the
 * suite keeps working while the inside changes.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { createBareRepo } from '../fakes/agent/git-repos.js';
import { createFakeGitea, type FakeGitea } from '../fakes/gitea/index.js';
import { freePort, startServe, type ServeHandle } from '../helpers/baton-bin.js';
import { fixtureJson, giteaHeaders, toBody } from '../helpers/gitea-webhook.js';
import { PG_URL } from '../helpers/stores.js';
import { createTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { until } from '../helpers/until.js';
import { runProcesses } from './proc.js';

const CHAOS_AGENT = fileURLToPath(new URL('../fakes/agent/chaos-agent.mjs', import.meta.url));
const SECRET = 'chaos-webhook-secret';
const DEV_TOKEN = 'chaos-dev-token-0123456789';
const REVIEW_TOKEN = 'chaos-review-token-0123456789';
const API_TOKEN = `chaos-admin-token-${'0123456789abcdef'.repeat(2)}`;
export const OWNER = 'acme';
export const REPO = 'app';
export const TERMINAL = ['succeeded', 'failed', 'timed_out', 'cancelled', 'dead'];

/** What fake-claude does in a run, by issue number (FAKE_CLAUDE_MODE, see fake-claude.mjs). */
export type AgentMode = 'success' | 'crash' | 'hang' | 'garbage' | 'flood';

export interface WorldOptions {
  /** Names the temporary directory and the PostgreSQL schema. */
  name: string;
  database: 'sqlite' | 'postgres';
  replicas?: number;
  /** PostgreSQL only: every replica reaches the database through one TCP proxy the test can cut. */
  databaseProxy?: boolean;
  concurrency?: number;
  /** Extra environment of every replica (e.g. RUN_MAX_DURATION_MINUTES). */
  env?: Record<string, string>;
  /**
   * Where replica `index` keeps its spool (webhooks.spoolDir). Each replica has its own, as each
   * has its own disk in a deployment. @default DATA_DIR/spool-<index>
   */
  spoolDir?: (index: number) => string | undefined;
  /** SQLite only: the database file. @default <root>/baton.db */
  sqliteFile?: string;
}

export interface ApiRun {
  id: number;
  stage: string;
  number: number | null;
  status: string;
  attempts: number;
  lastError: string | null;
  workspaceName: string | null;
}

export interface Delivery {
  number: number;
  delivery: string;
  body: Buffer;
  /** HTTP status of the answer that accepted it (2xx), once one did. */
  accepted?: number;
  /** Attempts that got no answer, or a 5xx, before one was accepted. */
  unanswered: number;
  /** The last attempt's answer: its HTTP status, or `no answer`, and when it was sent and answered. */
  last?: { status: number | 'no answer'; sentAt: number; answeredAt: number; replica: number };
  /** The accepting answer said the delivery went to the replica's spool (`{ spooled: true }`). */
  spooled?: boolean;
  /** Every answer, in order (`no answer` for a refused or dropped connection), for failure messages. */
  answers: string[];
}

export interface World {
  root: string;
  dataDir: string;
  gitea: FakeGitea;
  proxy?: TcpProxy;
  servers: Array<ServeHandle | undefined>;
  /** The replicas' fixed ports: a restarted replica listens where its runners call back. */
  ports: number[];
  /** Each replica's spool directory. */
  spoolDirs: string[];
  start(index: number): Promise<ServeHandle>;
  /** SIGKILL: no drain, no goodbye; the replica's runners live on. */
  kill(index: number): Promise<void>;
  /** Waits until the replica answers /ready; resolves with how long that took from `since`. */
  ready(index: number, since: number): Promise<number>;
  /** Creates `count` more issues on the fake Gitea; returns their numbers. */
  addIssues(count: number): number[];
  /** What the agent of the runs for issue `number` does (`success` unless set). */
  setAgent(number: number, mode: AgentMode): void;
  issueOpened(number: number): Delivery;
  /** Sends (or re-sends, same delivery id) to a live replica; true when accepted. */
  deliver(d: Delivery, index?: number): Promise<boolean>;
  api<T>(pathname: string): Promise<T>;
  /** GET `pathname` of replica `index` with the admin token (its status and body; null when it did not answer). */
  apiOf(index: number, pathname: string): Promise<{ status: number; text: string } | null>;
  runs(): Promise<ApiRun[]>;
  /** Every replica's output (the lines that contain `filter`, if given), for failure messages. */
  output(filter?: (line: string) => boolean): string;
  close(): Promise<void>;
}

export async function createWorld(options: WorldOptions): Promise<World> {
  const replicas = options.replicas ?? 1;
  const root = fs.mkdtempSync(path.join(os.tmpdir(), `baton-chaos-${options.name}-`));
  // Runs are sandboxed as nobody when the suite runs as root: they must reach into the root.
  fs.chmodSync(root, 0o711);
  const dataDir = path.join(root, 'data');
  const repos = path.join(root, 'repos');
  fs.mkdirSync(path.join(repos, OWNER), { recursive: true });
  createBareRepo(path.join(repos, OWNER), REPO);

  // The agent's behaviour per issue, readable inside the sandbox (a read-only path).
  const planDir = path.join(root, 'plan');
  fs.mkdirSync(planDir);
  const plan = path.join(planDir, 'agents.json');
  const agents: Record<number, AgentMode> = {};
  fs.writeFileSync(plan, '{}');
  fs.chmodSync(planDir, 0o755);
  fs.chmodSync(plan, 0o644);

  const gitea = await createFakeGitea();
  gitea.addUser('claude-dev', { token: DEV_TOKEN });
  gitea.addUser('claude-review', { token: REVIEW_TOKEN });
  gitea.addUser('alice');
  gitea.addRepo(OWNER, REPO);
  // Senders need write access (checked by default), which the dev bot asks as repository admin.
  gitea.addCollaborator(OWNER, REPO, 'claude-dev', 'admin');
  gitea.addCollaborator(OWNER, REPO, 'alice', 'write');

  // Clone URLs (the payload's, one made from GITEA_URL, or the forge gateway's) lead to the bare repository.
  const home = path.join(root, 'home');
  fs.mkdirSync(home);
  const gitConfig = path.join(home, '.gitconfig');
  fs.writeFileSync(
    gitConfig,
    [
      '[user]',
      '\tname = Baton Chaos',
      '\temail = baton-chaos@example.invalid',
      `[url "file://${repos}/"]`,
      '\tinsteadOf = http://gitea.test/',
      `\tinsteadOf = ${gitea.url}/`,
      // A run clones through baton's forge gateway; the fake Gitea serves no git, the files do.
      '\tinsteadOf = http://baton.internal/gateway/',
      '[safe]',
      '\tdirectory = *',
      '',
    ].join('\n'),
  );
  fs.writeFileSync(
    path.join(root, 'baton.yaml'),
    [
      'local:',
      `  readOnlyPaths: [${[repos, path.dirname(CHAOS_AGENT), planDir].map((p) => JSON.stringify(p)).join(', ')}]`,
      `  gitConfig: ${JSON.stringify(gitConfig)}`,
      // Short enough that a lost claim or a failed attempt comes back within the scenario.
      'queue:',
      '  leaseSeconds: 5',
      '  pollSeconds: 1',
      '  backoffBaseSeconds: 1',
      '  backoffMaxSeconds: 5',
      '  maxAttempts: 10',
      'cleanup:',
      '  backoffBaseSeconds: 1',
      '',
    ].join('\n'),
  );

  let schema: string | undefined;
  let proxy: TcpProxy | undefined;
  let databaseUrl = `sqlite:${options.sqliteFile ?? path.join(root, 'baton.db')}`;
  const databaseEnv: Record<string, string> = {};
  if (options.database === 'postgres') {
    schema = `chaos_${options.name.replace(/\W/g, '_')}_${process.pid}_${Date.now().toString(36)}`;
    const admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    await admin.query(`CREATE SCHEMA ${schema}`);
    await admin.end();
    const url = new URL(PG_URL);
    if (options.databaseProxy) {
      proxy = await createTcpProxy(Number(url.port || 5432), url.hostname);
      url.port = String(proxy.port);
      url.hostname = '127.0.0.1';
    }
    databaseUrl = url.toString();
    // libpq's (and node-postgres') PGOPTIONS: every connection of the replica uses the schema.
    databaseEnv.PGOPTIONS = `-c search_path=${schema}`;
  }

  const ports: number[] = [];
  for (let i = 0; i < replicas; i++) ports.push(await freePort());
  const servers: Array<ServeHandle | undefined> = [];
  const outputs: string[] = ports.map(() => '');
  const spoolDirs = ports.map((_, i) => options.spoolDir?.(i) ?? path.join(dataDir, `spool-${i}`));
  // baton.yaml plus the replica's own spool directory, as each replica has its own disk in a deployment
  // (sharing one is safe too: each process owns a slot of it).
  const baseConfig = fs.readFileSync(path.join(root, 'baton.yaml'), 'utf8');
  const configFiles = spoolDirs.map((dir, i) => {
    const file = path.join(root, `baton-${i}.yaml`);
    fs.writeFileSync(file, `${baseConfig}webhooks:\n  spoolDir: ${JSON.stringify(dir)}\n`);
    return file;
  });

  const env = (index: number): Record<string, string> => ({
    HOME: home,
    HOST: '127.0.0.1',
    GITEA_URL: gitea.url,
    GITEA_DEV_TOKEN: DEV_TOKEN,
    GITEA_REVIEW_TOKEN: REVIEW_TOKEN,
    WEBHOOK_SECRET: SECRET,
    DATABASE_URL: databaseUrl,
    ...databaseEnv,
    BATON_DATA_DIR: dataDir,
    BATON_CONFIG: configFiles[index]!,
    BATON_BOOTSTRAP_TOKEN: API_TOKEN,
    QUEUE_CONCURRENCY: String(options.concurrency ?? 4),
    CALLBACK_URL: `http://127.0.0.1:${ports[index]}`,
    BATON_AGENT_COMMAND: JSON.stringify([process.execPath, CHAOS_AGENT, plan]),
    ...options.env,
  });

  const isUp = (s: ServeHandle | undefined) => s !== undefined && s.process.exitCode === null && s.process.signalCode === null;

  const world: World = {
    root,
    dataDir,
    gitea,
    proxy,
    servers,
    ports,
    spoolDirs,
    async start(index) {
      const previous = servers[index];
      if (previous) outputs[index] += previous.output();
      const server = await startServe(env(index), root, undefined, ports[index]);
      servers[index] = server;
      return server;
    },
    async kill(index) {
      const server = servers[index];
      if (!server) return;
      await server.stop('SIGKILL');
    },
    async ready(index, since) {
      const server = servers[index]!;
      await until(
        async () => (await fetch(`${server.url}/ready`).catch(() => null))?.status === 200,
        `replica ${index} to be ready`,
        120_000,
      );
      return Date.now() - since;
    },
    addIssues(count) {
      return Array.from({ length: count }, () => gitea.addIssue(OWNER, REPO, { title: 'chaos issue', author: 'alice' }).number);
    },
    setAgent(number, mode) {
      agents[number] = mode;
      fs.writeFileSync(plan, JSON.stringify(agents));
    },
    issueOpened(number) {
      const payload = fixtureJson('issues-opened.json');
      const issue = payload.issue as Record<string, unknown>;
      payload.number = number;
      issue.number = number;
      issue.id = 1000 + number;
      issue.title = `chaos issue ${number}`;
      issue.url = `http://gitea.test/api/v1/repos/${OWNER}/${REPO}/issues/${number}`;
      issue.html_url = `http://gitea.test/${OWNER}/${REPO}/issues/${number}`;
      return { number, delivery: randomUUID(), body: toBody(payload), unanswered: 0, answers: [] };
    },
    async deliver(d, index) {
      const replica = index ?? servers.findIndex(isUp);
      const target = servers[replica];
      if (!isUp(target)) return false;
      const headers = giteaHeaders(d.body, { event: 'issues', eventType: 'issues', secret: SECRET, delivery: d.delivery });
      const sentAt = Date.now();
      const res = await fetch(`${target!.url}/webhook/gitea`, { method: 'POST', headers, body: d.body }).catch(() => null);
      const text = res ? await res.text().catch(() => null) : null;
      d.answers.push(res && text !== null ? `${res.status} ${text}` : 'no answer');
      d.last = { status: res && text !== null ? res.status : 'no answer', sentAt, answeredAt: Date.now(), replica };
      if (!res || text === null || res.status >= 500) {
        d.unanswered++;
        return false;
      }
      // A 4xx for a correctly signed, well-formed delivery is a bug, not a fault to ride out.
      if (res.status >= 400) throw new Error(`delivery for #${d.number} refused with ${res.status}: ${text}`);
      d.accepted = res.status;
      d.spooled = (JSON.parse(text) as { spooled?: boolean }).spooled === true;
      return true;
    },
    async api<T>(pathname: string) {
      let lastError: unknown;
      for (const server of servers) {
        if (!isUp(server)) continue;
        try {
          const res = await fetch(`${server!.url}${pathname}`, { headers: { authorization: `Bearer ${API_TOKEN}` } });
          if (res.ok) return (await res.json()) as T;
          lastError = new Error(`GET ${pathname}: ${res.status} ${await res.text()}`);
        } catch (err) {
          lastError = err;
        }
      }
      throw new Error(`no replica answered GET ${pathname}`, { cause: lastError });
    },
    async apiOf(index, pathname) {
      const server = servers[index];
      if (!isUp(server)) return null;
      const res = await fetch(`${server!.url}${pathname}`, { headers: { authorization: `Bearer ${API_TOKEN}` } }).catch(() => null);
      const text = res ? await res.text().catch(() => null) : null;
      return res && text !== null ? { status: res.status, text } : null;
    },
    async runs() {
      const all: ApiRun[] = [];
      let cursor: string | null = null;
      do {
        const page: { runs: ApiRun[]; nextCursor: string | null } = await world.api(
          `/api/runs?repo=${OWNER}/${REPO}&limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        );
        all.push(...page.runs);
        cursor = page.nextCursor;
      } while (cursor);
      return all;
    },
    output(filter) {
      return servers
        .map((s, i) => {
          const lines = (outputs[i] + (s?.output() ?? '')).split('\n').filter((l) => !l.includes('"msg":"configuration"'));
          return `--- replica ${i}\n${(filter ? lines.filter(filter) : lines).join('\n').slice(-6000)}`;
        })
        .join('\n');
    },
    async close() {
      try {
        await Promise.all(servers.map((s) => s?.stop('SIGKILL')));
        // Whatever a failed scenario left running must not outlive it (the assertions said so).
        for (const p of runProcesses(dataDir)) {
          try {
            process.kill(p.pid, 'SIGKILL');
          } catch {
            // gone meanwhile
          }
        }
      } finally {
        await proxy?.close();
        await gitea.close();
        if (schema) {
          const admin = new pg.Client({ connectionString: PG_URL });
          await admin.connect();
          await admin.query(`DROP SCHEMA ${schema} CASCADE`);
          await admin.end();
        }
        fs.rmSync(root, { recursive: true, force: true });
      }
    },
  };
  return world;
}
