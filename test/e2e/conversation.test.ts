import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStore, type Store } from '../../src/store/index.js';
import { createBareRepo } from '../fakes/agent/git-repos.js';
import { createFakeGitea, type FakeGitea } from '../fakes/gitea/index.js';
import { BATON_BIN, freePort, runBaton, startServe, type ServeHandle } from '../helpers/baton-bin.js';
import { fixtureJson, giteaHeaders, toBody } from '../helpers/gitea-webhook.js';
import { until } from '../helpers/until.js';
import { processedDelivery } from '../helpers/deliveries.js';
import type { Delivery } from '../../src/ingress/index.js';

/**
 * Conversations through the real `baton serve`: local workspaces in the real sandbox running the
 * real `baton agent` with a fake `claude` that keeps its sessions as Claude Code does (under
 * $HOME/.claude/projects/<encoded cwd>/, refusing `--resume` of a session it cannot find there).
 * The agent asks with `baton ask` from its PATH; the run parks without its workspace, a second
 * issue's run uses the only slot meanwhile, a write user's reply resumes the same session in a
 * fresh workspace from the transcript baton kept, and the answer ends up on the issue. A kill -9
 * of serve while the run waits and while it resumes loses nothing. ChatOps through the same server.
 */

const FAKE_CLAUDE = fileURLToPath(new URL('../fakes/agent/fake-claude.mjs', import.meta.url));
const SECRET = 'e2e-conversation-secret';
const DEV_TOKEN = 'e2e-dev-token-conversation-0123';
const REVIEW_TOKEN = 'e2e-review-token-conversation-0123';
const API_TOKEN = 'baton_e2e-conversation-api-token-0123456789';
const TERMINAL = ['succeeded', 'failed', 'timed_out', 'cancelled', 'dead', 'expired'];
const QUESTION = 'Which database should the service use, PostgreSQL or SQLite?';
/** Issues: 1 asks (and is answered), 2 does its work at once, 3 asks and gets no reply, 4 is for ChatOps. */
const ASKING = ['1', '3'];

describe('baton serve: an agent asks, the run waits, a reply resumes the session', () => {
  let root: string;
  let gitea: FakeGitea;
  let server: ServeHandle;
  let store: Store;
  let env: Record<string, string>;
  let port: number;
  const dataDir = () => path.join(root, 'data');

  beforeAll(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-e2e-conversation-'));
    // Runs are sandboxed as nobody when this suite runs as root: they must reach the repositories.
    fs.chmodSync(root, 0o711);
    const repos = path.join(root, 'repos');
    fs.mkdirSync(path.join(repos, 'acme'), { recursive: true });
    const settings = {
      modeByIssue: Object.fromEntries(ASKING.map((n) => [n, 'ask'])),
      question: QUESTION,
      // The answering turn takes a moment: long enough to kill the server while it runs.
      answerDelayMs: 1_500,
    };
    createBareRepo(path.join(repos, 'acme'), 'app', { develop: { '.fake-claude.json': JSON.stringify(settings) } });
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
    fs.writeFileSync(
      path.join(root, 'baton.yaml'),
      `local:\n  readOnlyPaths: [${JSON.stringify(repos)}, ${JSON.stringify(path.dirname(FAKE_CLAUDE))}]\n  gitConfig: ${JSON.stringify(gitConfig)}\n`,
    );

    gitea = await createFakeGitea();
    gitea.addUser('claude-dev', { token: DEV_TOKEN });
    gitea.addUser('claude-review', { token: REVIEW_TOKEN });
    for (const login of ['alice', 'rita']) gitea.addUser(login);
    gitea.addRepo('acme', 'app');
    for (let n = 1; n <= 4; n++) gitea.addIssue('acme', 'app', { title: `issue ${n}`, author: 'alice' });
    gitea.addCollaborator('acme', 'app', 'claude-dev', 'admin');
    gitea.addCollaborator('acme', 'app', 'alice', 'write');
    gitea.addCollaborator('acme', 'app', 'rita', 'read');

    port = await freePort();
    env = {
      HOME: home,
      HOST: '127.0.0.1',
      GITEA_URL: gitea.url,
      GITEA_CLONE_URL: 'http://gitea.test',
      GITEA_DEV_TOKEN: DEV_TOKEN,
      GITEA_REVIEW_TOKEN: REVIEW_TOKEN,
      WEBHOOK_SECRET: SECRET,
      BATON_BOOTSTRAP_TOKEN: API_TOKEN,
      DATABASE_URL: `sqlite:${path.join(root, 'baton.db')}`,
      BATON_DATA_DIR: dataDir(),
      // One slot: the second issue's run can only start if the waiting run holds none.
      QUEUE_CONCURRENCY: '1',
      BATON_AGENT_COMMAND: JSON.stringify([process.execPath, FAKE_CLAUDE]),
    };
    server = await startServe(env, root, BATON_BIN, port);
    store = createStore({ url: env.DATABASE_URL! });
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

  async function send(payload: unknown, event: string): Promise<Delivery> {
    const body = toBody(payload);
    const headers = giteaHeaders(body, { event, eventType: event, secret: SECRET, delivery: randomUUID() });
    const res = await fetch(`${server.url}/webhook/gitea`, { method: 'POST', headers, body });
    const answer = (await res.json()) as { id: number };
    expect(res.status, JSON.stringify(answer)).toBe(202);
    return processedDelivery(store, answer.id);
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- webhook bodies, changed field by field
  const repository = (payload: Record<string, any>) => ({
    ...payload.repository,
    name: 'app',
    full_name: 'acme/app',
    owner: { ...payload.repository.owner, login: 'acme', username: 'acme' },
  });

  async function open(number: number): Promise<number> {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a webhook body
    const payload = fixtureJson('issues-opened.json') as Record<string, any>;
    payload.issue = { ...payload.issue, number, title: `issue ${number}`, labels: [] };
    payload.repository = repository(payload);
    const delivery = await send(payload, 'issues');
    expect(delivery).toMatchObject({ outcome: 'started', stages: ['analyse'] });
    return delivery.runIds[0]!;
  }

  async function comment(number: number, author: string, body: string): Promise<Delivery> {
    const id = gitea.addComment('acme', 'app', number, { author, body }).id;
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a webhook body
    const payload = fixtureJson('issue_comment-created.json') as Record<string, any>;
    payload.issue = { ...payload.issue, number, state: 'open', labels: [], pull_request: null };
    payload.comment = { ...payload.comment, id, body, user: { ...payload.comment.user, login: author, username: author } };
    payload.repository = repository(payload);
    payload.sender = { ...payload.sender, login: author, username: author };
    return send(payload, 'issue_comment');
  }

  const run = (id: number) => store.db.selectFrom('runs').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const conversation = (id: number) =>
    store.db
      .selectFrom('run_conversations' as never)
      .selectAll()
      .where('run_id' as never, '=', id as never)
      .executeTakeFirst() as Promise<Record<string, unknown> | undefined>;
  const statusPath = async (id: number) =>
    (await store.db.selectFrom('run_events').select('to_status').where('run_id', '=', id).orderBy('id').execute())
      .map((e) => e.to_status)
      .filter((s): s is string => s !== null);
  const botComments = (number: number) => gitea.comments('acme', 'app', number).filter((c) => c.author === 'claude-dev');
  const workspaceDirs = () => (fs.existsSync(path.join(dataDir(), 'workspaces')) ? fs.readdirSync(path.join(dataDir(), 'workspaces')) : []);
  const finished = (id: number) =>
    until(async () => {
      const row = await run(id);
      return TERMINAL.includes(row.status) ? row : null;
    }, `run ${id} to end`);

  /** SIGKILL, then a new server on the same port and database (where runners call back). */
  async function killAndRestart(extra: Record<string, string> = {}) {
    await server.stop('SIGKILL');
    server = await startServe({ ...env, ...extra }, root, BATON_BIN, port);
  }

  let asking: number;
  let sessionId: string;

  it('parks the run on the question: posted on the issue, transcript and branch kept, workspace gone', async () => {
    asking = await open(1);
    const parked = await until(async () => {
      const row = await run(asking);
      if (TERMINAL.includes(row.status)) throw new Error(`run ${asking} ended ${row.status}: ${row.last_error}\n${server.output()}`);
      return row.status === 'waiting' ? row : null;
    }, `run ${asking} to wait for a reply`);
    expect(parked.workspace_name).toBeNull();
    const question = await until(() => botComments(1).find((c) => c.body.includes('has a question')), 'the question on #1');
    expect(question.body).toContain(`> ${QUESTION}`);
    expect(question.body).toContain('Reply in a comment to resume it');

    const kept = (await conversation(asking))!;
    sessionId = kept.session_id as string;
    expect(sessionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(kept.question).toBe(QUESTION);
    expect(Number(kept.transcript_bytes)).toBeGreaterThan(0);
    const transcript = gunzipSync(Buffer.from(kept.transcript as Uint8Array)).toString();
    const header = JSON.parse(transcript.split('\n')[0]!) as Record<string, unknown>;
    // The session file as the CLI wrote it, under HOME, for the sandbox's fixed working directory.
    expect(header).toMatchObject({ format: 'baton-transcript', agent: 'claude', cwd: '/workspace/app', sessionId, branch: 'develop' });
    expect(transcript).toContain(`"file":".claude/projects/-workspace-app/${sessionId}.jsonl"`);
    // No workspace while it waits.
    await until(() => workspaceDirs().length === 0, 'the asking run’s workspace to be removed');
  }, 120_000);

  it('frees the slot while it waits: a second issue’s run starts and finishes (concurrency 1)', async () => {
    const other = await open(2);
    const done = await finished(other);
    expect(done.status, `${done.last_error}\n${server.output()}`).toBe('succeeded');
    expect((await run(asking)).status).toBe('waiting');
    // A run that never asks keeps its agent's stream too (one turn), without the CLI's session files.
    const kept = gunzipSync(Buffer.from((await conversation(other))!.transcript as Uint8Array)).toString();
    expect(kept).not.toContain('"file":');
    const [turn] = kept
      .split('\n')
      .filter((l) => l.startsWith('{"turn"'))
      .map((l) => (JSON.parse(l) as { turn: { turn: number; by: string; stream: string[]; costUsd: number } }).turn);
    expect(turn).toMatchObject({ turn: 1, by: 'baton', costUsd: 0.0124 });
    expect(turn!.stream.some((l) => l.includes('"type":"result"'))).toBe(true);
  }, 120_000);

  // Servers a test starts would count as its leaks: each kill and restart is a hook of its own.
  describe('serve killed (-9) while the run waits', () => {
    let before: Record<string, unknown>;
    beforeAll(async () => {
      before = (await conversation(asking))!;
      await killAndRestart();
    }, 60_000);

    it('loses neither the question nor the transcript', async () => {
      expect((await run(asking)).status).toBe('waiting');
      const after = (await conversation(asking))!;
      expect(after.question).toBe(QUESTION);
      expect(after.transcript_bytes).toBe(before.transcript_bytes);
      expect(Buffer.from(after.transcript as Uint8Array).equals(Buffer.from(before.transcript as Uint8Array))).toBe(true);
      expect(botComments(1).filter((c) => c.body.includes('has a question'))).toHaveLength(1);
    }, 60_000);

    it('does not resume on a read-only user’s comment', async () => {
      const delivery = await comment(1, 'rita', 'Use SQLite.');
      expect(delivery.outcome).toBe('not_permitted');
      expect((await run(asking)).status).toBe('waiting');
    }, 60_000);
  });

  describe('a write user’s reply, and serve killed (-9) while the resumed turn runs', () => {
    let reply: Delivery;
    beforeAll(async () => {
      reply = await comment(1, 'alice', 'Use PostgreSQL.');
      // The resumed turn is running in a fresh workspace: kill the server under it.
      await until(async () => {
        const row = await run(asking);
        if (TERMINAL.includes(row.status)) throw new Error(`run ${asking} ended ${row.status}: ${row.last_error}\n${server.output()}`);
        return row.status === 'running' && row.agent_attempt === 2;
      }, 'the resumed turn to run');
      await killAndRestart();
    }, 120_000);

    it('resumes the same session from the transcript and ends with the agent’s answer on the issue', async () => {
      expect(reply.outcome).toBe('started');
      const done = await finished(asking);
      expect(done.status, `${done.last_error}\n${server.output()}`).toBe('succeeded');
      const answer = await until(() => botComments(1).find((c) => c.body.includes('finished')), 'the final comment on #1');
      // The fake found its session file where it wrote it (else: "No conversation found with session ID").
      expect(answer.body).toMatch(
        new RegExp(`Answered after 1 question\\(s\\) in session ${sessionId} \\(\\d+ entries restored\\): Use PostgreSQL\\.`),
      );
      const statuses = await statusPath(asking);
      expect(statuses.slice(statuses.indexOf('waiting'))).toEqual(expect.arrayContaining(['waiting', 'queued', 'running', 'succeeded']));
      expect(statuses.at(-1)).toBe('succeeded');
      // Both turns count: the fake reports $0.0124 a turn.
      expect(done.cost_usd).toBeCloseTo(0.0248, 4);
      const kept = (await conversation(asking))!;
      expect(kept.reply).toBe('Use PostgreSQL.');
      expect(kept.reply_by).toBe('alice');
      const turns = gunzipSync(Buffer.from(kept.transcript as Uint8Array))
        .toString()
        .split('\n')
        .filter((l) => l.startsWith('{"turn"'))
        .map((l) => (JSON.parse(l) as { turn: { turn: number; by: string; question: string | null } }).turn);
      expect(turns.map((t) => [t.turn, t.by, t.question])).toEqual([
        [1, 'baton', QUESTION],
        [2, 'alice', null],
      ]);

      // What people read: `baton logs --transcript` over the API, both turns with what each cost.
      const printed = await runBaton(['logs', String(asking), '--transcript'], { env: { BATON_URL: server.url, BATON_TOKEN: API_TOKEN } });
      expect(printed.code, printed.stderr).toBe(0);
      expect(printed.stdout).toContain(`run #${asking} analyse #1 · succeeded · 2 turn(s) · $0.0248`);
      expect(printed.stdout).toContain("── turn 1 · baton's prompt ──");
      expect(printed.stdout).toMatch(/ {2}▸ Bash \{"command":"baton ask /);
      expect(printed.stdout).toContain(`  > ${QUESTION}`);
      expect(printed.stdout).toContain('── turn 2 · reply from @alice ──\n  Use PostgreSQL.');
      expect(printed.stdout).toMatch(/\(turn 2: \$0\.0124 · [\d,]+ tokens · /);
    }, 180_000);
  });

  describe('a question nobody answers', () => {
    // The same server again, with a reply wait of 3.6 s and a sweep every 3 s.
    beforeAll(() => killAndRestart({ RUN_REPLY_WAIT_HOURS: '0.001', SWEEP_MINUTES: '0.05' }), 60_000);

    it('ends the run expired, with a comment on the issue', async () => {
      const unanswered = await open(3);
      await until(async () => ['waiting', 'expired'].includes((await run(unanswered)).status), `run ${unanswered} to wait`);
      const done = await finished(unanswered);
      expect(done.status, `${done.last_error}\n${server.output()}`).toBe('expired');
      const expired = await until(() => botComments(3).find((c) => c.body.includes('ended `expired`')), 'the expiry comment on #3');
      expect(expired.body).toContain('waited for a reply to its question and got none in time');
      expect(botComments(3).some((c) => c.body.includes('has a question'))).toBe(true);
      expect(await statusPath(unanswered)).toEqual(expect.arrayContaining(['running', 'waiting', 'expired']));
    }, 120_000);
  });

  describe('ChatOps through serve', () => {
    it('answers a write user’s status, a read-only user’s command and an unknown command', async () => {
      const status = await comment(1, 'alice', '@baton status');
      expect(status.outcome).not.toBe('not_permitted');
      const table = await until(() => botComments(1).find((c) => c.body.startsWith('Status of #1')), 'the status reply');
      // The whole conversation is one run, its cost both turns'.
      expect(table.body).toContain(`| ${asking} | \`analyse\` | succeeded |`);
      expect(table.body).toContain('$0.02');
      const refused = await comment(4, 'rita', '@baton cancel');
      expect(refused.outcome).toBe('not_permitted');
      await until(
        () => botComments(4).find((c) => c.body.includes('@rita only people with write access to acme/app can give baton commands')),
        'the refusal',
      );
      await comment(4, 'alice', '@baton frobnicate');
      const help = await until(
        () => botComments(4).find((c) => c.body.includes("I don't know the command `frobnicate`")),
        'the help reply',
      );
      expect(help.body).toContain('`@baton retry`');
    }, 60_000);
  });
});
