import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import type { Delivery } from '../../src/ingress/index.js';
import { createStore, type Store } from '../../src/store/index.js';
import { createBareRepo } from '../fakes/agent/git-repos.js';
import { createFakeGitea, type FakeGitea } from '../fakes/gitea/index.js';
import { BATON_BIN, freePort, startServe, type ServeHandle } from './baton-bin.js';
import { acceptedDelivery } from './deliveries.js';
import { fixtureJson, giteaHeaders, toBody } from './gitea-webhook.js';
import { until } from './until.js';

export const FAKE_CLAUDE = fileURLToPath(new URL('../fakes/agent/fake-claude.mjs', import.meta.url));
/** The other first-class agents a conversation suite can run, each with its fake CLI, model and key. */
export const CONVERSATION_AGENTS = {
  codex: { fake: 'fake-codex.mjs', model: 'gpt-5-codex', keyEnv: 'BATON_CODEX_API_KEY' },
  gemini: { fake: 'fake-gemini.mjs', model: 'gemini-2.5-flash', keyEnv: 'BATON_GEMINI_API_KEY' },
  opencode: { fake: 'fake-opencode.mjs', model: 'anthropic/claude-sonnet-4-5', keyEnv: 'BATON_OPENCODE_API_KEY' },
} as const;
export type ConversationAgent = keyof typeof CONVERSATION_AGENTS;
export const API_TOKEN = 'baton_e2e-conversation-api-token-0123456789';
export const TERMINAL = ['succeeded', 'failed', 'timed_out', 'cancelled', 'dead', 'expired'];
const SECRET = 'e2e-conversation-secret';
const DEV_TOKEN = 'e2e-dev-token-conversation-0123';
const REVIEW_TOKEN = 'e2e-review-token-conversation-0123';

/** One kept turn of a run's transcript (agent/conversation.ts `TranscriptTurn`), as the tests read it. */
export interface KeptTurn {
  turn: number;
  by: string;
  prompt: string;
  reply?: string;
  question: string | null;
  stream: string[];
  costUsd: number | null;
  usage: Record<string, number> | null;
}

/**
 * The conversation suites' world: the real `baton serve` with local workspaces in the real
 * sandbox running the real `baton agent` with the fake `claude` (which keeps its sessions as
 * Claude Code does, under $HOME/.claude/projects/<encoded cwd>/, and refuses `--resume` of one it
 * cannot find there); a fake Gitea with acme/app (issues 1–`issues`, alice with write access,
 * rita with read); the repository's `.fake-claude.json` on `develop` says how each issue's agent
 * behaves. One slot (QUEUE_CONCURRENCY 1), so a run that waits must hold none. With `agent`, every
 * stage runs that agent instead (`agents.default`), its fake CLI (test/fakes/agent/fake-<agent>.mjs,
 * which keeps its sessions where the real CLI does) reading `.fake-agent.json`, with its own key.
 */
export interface ConversationServe {
  gitea: FakeGitea;
  store: Store;
  readonly server: ServeHandle;
  dataDir: string;
  /** Opens issue `number` (an `issues` webhook) and returns the analyse run it started. */
  open(number: number): Promise<number>;
  /** A comment on the issue by `author` (in the fake Gitea and as its webhook); the delivery's verdict. */
  comment(number: number, author: string, body: string): Promise<Delivery>;
  run(
    id: number,
  ): Promise<{ status: string; agent_attempt: number; workspace_name: string | null; last_error: string | null } & Record<string, unknown>>;
  /** The run's `run_conversations` row. */
  conversation(id: number): Promise<Record<string, unknown> | undefined>;
  /** The turns of the transcript baton keeps for the run. */
  keptTurns(id: number): Promise<KeptTurn[]>;
  statusPath(id: number): Promise<string[]>;
  botComments(number: number): { id: number; body: string; author: string }[];
  /** Waits until the run is in `status` (failing at once, with the server's output, when it ends otherwise). */
  until(id: number, status: string, check?: (row: Awaited<ReturnType<ConversationServe['run']>>) => boolean): Promise<void>;
  finished(id: number): Promise<Awaited<ReturnType<ConversationServe['run']>>>;
  /** SIGKILL, then a new server on the same port and database (where runners call back). */
  killAndRestart(extra?: Record<string, string>): Promise<void>;
  close(): Promise<void>;
}

export async function startConversationServe(options: {
  name: string;
  /** `.fake-claude.json` of the repository (test/fakes/agent/fake-claude.mjs), `.fake-agent.json` with `agent`. */
  settings: Record<string, unknown>;
  /** The agent of every stage; Claude Code when absent. */
  agent?: ConversationAgent;
  issues: number;
  env?: Record<string, string>;
}): Promise<ConversationServe> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), `baton-e2e-${options.name}-`));
  // Runs are sandboxed as nobody when the suite runs as root: they must reach the repositories.
  fs.chmodSync(root, 0o711);
  const repos = path.join(root, 'repos');
  fs.mkdirSync(path.join(repos, 'acme'), { recursive: true });
  const settingsFile = options.agent ? '.fake-agent.json' : '.fake-claude.json';
  createBareRepo(path.join(repos, 'acme'), 'app', { develop: { [settingsFile]: JSON.stringify(options.settings) } });
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
      '\tinsteadOf = http://gitea.test/',
      // Runs reach git through the forge gateway, which passes it on to GITEA_CLONE_URL.
      '\tinsteadOf = http://baton.internal/gateway/',
      '[safe]',
      '\tdirectory = *',
      '',
    ].join('\n'),
  );
  const other = options.agent ? CONVERSATION_AGENTS[options.agent] : null;
  const agents = other
    ? `agents:\n  default: ${options.agent}\n  ${options.agent}: { command: ${JSON.stringify([process.execPath, path.join(path.dirname(FAKE_CLAUDE), other.fake)])}, model: ${other.model} }\n`
    : '';
  fs.writeFileSync(
    path.join(root, 'baton.yaml'),
    `local:\n  readOnlyPaths: [${JSON.stringify(repos)}, ${JSON.stringify(path.dirname(FAKE_CLAUDE))}]\n  gitConfig: ${JSON.stringify(gitConfig)}\n` +
      agents,
  );

  const gitea = await createFakeGitea();
  gitea.addUser('claude-dev', { token: DEV_TOKEN });
  gitea.addUser('claude-review', { token: REVIEW_TOKEN });
  for (const login of ['alice', 'rita']) gitea.addUser(login);
  gitea.addRepo('acme', 'app');
  for (let n = 1; n <= options.issues; n++) gitea.addIssue('acme', 'app', { title: `issue ${n}`, author: 'alice' });
  gitea.addCollaborator('acme', 'app', 'claude-dev', 'admin');
  gitea.addCollaborator('acme', 'app', 'alice', 'write');
  gitea.addCollaborator('acme', 'app', 'rita', 'read');

  const port = await freePort();
  const dataDir = path.join(root, 'data');
  const env: Record<string, string> = {
    HOME: home,
    HOST: '127.0.0.1',
    GITEA_URL: gitea.url,
    GITEA_CLONE_URL: 'http://gitea.test',
    GITEA_DEV_TOKEN: DEV_TOKEN,
    GITEA_REVIEW_TOKEN: REVIEW_TOKEN,
    WEBHOOK_SECRET: SECRET,
    BATON_BOOTSTRAP_TOKEN: API_TOKEN,
    DATABASE_URL: `sqlite:${path.join(root, 'baton.db')}`,
    BATON_DATA_DIR: dataDir,
    QUEUE_CONCURRENCY: '1',
    ...(other
      ? {
          [other.keyEnv]: `e2e-conversation-${options.agent}-key`,
          // No `claude` anywhere (node_modules/.bin has one): a pipeline without Claude Code needs none.
          PATH: (process.env.PATH ?? '')
            .split(path.delimiter)
            .filter((dir) => dir !== '' && !fs.existsSync(path.join(dir, 'claude')))
            .join(path.delimiter),
        }
      : { BATON_AGENT_COMMAND: JSON.stringify([process.execPath, FAKE_CLAUDE]) }),
    ...options.env,
  };
  let server = await startServe(env, root, BATON_BIN, port);
  const store = createStore({ url: env.DATABASE_URL! });

  async function send(payload: unknown, event: string): Promise<Delivery> {
    const body = toBody(payload);
    const headers = giteaHeaders(body, { event, eventType: event, secret: SECRET, delivery: randomUUID() });
    const res = await fetch(`${server.url}/webhook/gitea`, { method: 'POST', headers, body });
    const answer = (await res.json()) as { id?: number; spooled?: boolean };
    expect(res.status, JSON.stringify(answer)).toBe(202);
    return acceptedDelivery(store, answer, { body, headers });
  }
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- webhook bodies, changed field by field
  const repository = (payload: Record<string, any>) => ({
    ...payload.repository,
    name: 'app',
    full_name: 'acme/app',
    owner: { ...payload.repository.owner, login: 'acme', username: 'acme' },
  });
  const run = (id: number) => store.db.selectFrom('runs').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const conversation = (id: number) =>
    store.db
      .selectFrom('run_conversations' as never)
      .selectAll()
      .where('run_id' as never, '=', id as never)
      .executeTakeFirst() as Promise<Record<string, unknown> | undefined>;

  const world: ConversationServe = {
    gitea,
    store,
    get server() {
      return server;
    },
    dataDir,
    async open(number) {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a webhook body
      const payload = fixtureJson('issues-opened.json') as Record<string, any>;
      payload.issue = { ...payload.issue, number, title: `issue ${number}`, labels: [] };
      payload.repository = repository(payload);
      const delivery = await send(payload, 'issues');
      expect(delivery).toMatchObject({ outcome: 'started', stages: ['analyse'] });
      return delivery.runIds[0]!;
    },
    async comment(number, author, body) {
      const id = gitea.addComment('acme', 'app', number, { author, body }).id;
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a webhook body
      const payload = fixtureJson('issue_comment-created.json') as Record<string, any>;
      payload.issue = { ...payload.issue, number, state: 'open', labels: [], pull_request: null };
      payload.comment = { ...payload.comment, id, body, user: { ...payload.comment.user, login: author, username: author } };
      payload.repository = repository(payload);
      payload.sender = { ...payload.sender, login: author, username: author };
      return send(payload, 'issue_comment');
    },
    run,
    conversation,
    async keptTurns(id) {
      const kept = await conversation(id);
      if (!kept?.transcript) return [];
      return gunzipSync(Buffer.from(kept.transcript as Uint8Array))
        .toString()
        .split('\n')
        .filter((l) => l.startsWith('{"turn"'))
        .map((l) => (JSON.parse(l) as { turn: KeptTurn }).turn);
    },
    async statusPath(id) {
      return (await store.db.selectFrom('run_events').select('to_status').where('run_id', '=', id).orderBy('id').execute())
        .map((e) => e.to_status)
        .filter((s): s is string => s !== null);
    },
    botComments: (number) => gitea.comments('acme', 'app', number).filter((c) => c.author === 'claude-dev'),
    async until(id, status, check = () => true) {
      await until(async () => {
        const row = await run(id);
        if (row.status !== status && TERMINAL.includes(row.status)) {
          throw new Error(`run ${id} ended ${row.status}: ${row.last_error}\n${server.output()}`);
        }
        return row.status === status && check(row);
      }, `run ${id} to be ${status}`);
    },
    finished: (id) =>
      until(async () => {
        const row = await run(id);
        return TERMINAL.includes(row.status) ? row : null;
      }, `run ${id} to end`),
    async killAndRestart(extra = {}) {
      await server.stop('SIGKILL');
      const restarted = Date.now();
      server = await startServe({ ...env, ...extra }, root, BATON_BIN, port);
      // The new server's catch-up reads the forge once at start: a comment or issue a test adds
      // while that pass runs may come in twice, first from catch-up, the webhook's copy then a
      // `duplicate`. Tests go on once every repository's pass after the restart has finished.
      await until(async () => {
        const cursors = await store.db.selectFrom('forge_sync_cursors').select('last_pass_at').execute();
        return cursors.every((c) => c.last_pass_at !== null && Number(c.last_pass_at) >= restarted);
      }, 'catch-up after the restart');
    },
    async close() {
      try {
        await server?.stop('SIGTERM');
      } finally {
        await store?.close();
        await gitea?.close();
        fs.rmSync(root, { recursive: true, force: true });
      }
    },
  };
  return world;
}
