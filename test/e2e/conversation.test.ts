import fs from 'node:fs';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Delivery } from '../../src/ingress/index.js';
import { runBaton } from '../helpers/baton-bin.js';
import { API_TOKEN, startConversationServe, TERMINAL, type ConversationServe } from '../helpers/conversation-serve.js';
import { until } from '../helpers/until.js';

/**
 * Conversations through the real `baton serve`: local workspaces in the real sandbox running the
 * real `baton agent` with a fake `claude` that keeps its sessions as Claude Code does (under
 * $HOME/.claude/projects/<encoded cwd>/, refusing `--resume` of a session it cannot find there).
 * The agent asks with `baton ask` from its PATH; the run parks without its workspace, a second
 * issue's run uses the only slot meanwhile, a write user's reply resumes the same session in a
 * fresh workspace from the transcript baton kept, and the answer ends up on the issue. A kill -9
 * of serve while the run waits and while it resumes loses nothing. ChatOps through the same server.
 */

const QUESTION = 'Which database should the service use, PostgreSQL or SQLite?';
/**
 * Issues: 1 asks (and is answered), 2 does its work at once, 3 asks and gets no reply, 4 is for
 * ChatOps, 5 asks through the `ask` tool of `baton mcp` instead of `baton ask`.
 */
const ASKING = ['1', '3'];

describe('baton serve: an agent asks, the run waits, a reply resumes the session', () => {
  let world: ConversationServe;

  beforeAll(async () => {
    world = await startConversationServe({
      name: 'conversation',
      settings: {
        modeByIssue: { ...Object.fromEntries(ASKING.map((n) => [n, 'ask'])), '5': 'ask-mcp' },
        question: QUESTION,
        // The answering turn takes a moment: long enough to kill the server while it runs.
        answerDelayMs: 1_500,
      },
      issues: 5,
    });
  }, 60_000);
  afterAll(() => world?.close(), 60_000);

  const workspaceDirs = () => {
    const dir = path.join(world.dataDir, 'workspaces');
    return fs.existsSync(dir) ? fs.readdirSync(dir) : [];
  };

  let asking: number;
  let sessionId: string;

  it('parks the run on the question: posted on the issue, transcript and branch kept, workspace gone', async () => {
    asking = await world.open(1);
    const parked = await until(async () => {
      const row = await world.run(asking);
      if (TERMINAL.includes(row.status)) throw new Error(`run ${asking} ended ${row.status}: ${row.last_error}\n${world.server.output()}`);
      return row.status === 'waiting' ? row : null;
    }, `run ${asking} to wait for a reply`);
    expect(parked.workspace_name).toBeNull();
    const question = await until(() => world.botComments(1).find((c) => c.body.includes('has a question')), 'the question on #1');
    expect(question.body).toContain(`> ${QUESTION}`);
    expect(question.body).toContain('Reply in a comment to resume it');

    const kept = (await world.conversation(asking))!;
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
    const other = await world.open(2);
    const done = await world.finished(other);
    expect(done.status, `${done.last_error}\n${world.server.output()}`).toBe('succeeded');
    expect((await world.run(asking)).status).toBe('waiting');
    // A run that never asks keeps its agent's stream too (one turn), without the CLI's session files.
    const kept = gunzipSync(Buffer.from((await world.conversation(other))!.transcript as Uint8Array)).toString();
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
      before = (await world.conversation(asking))!;
      await world.killAndRestart();
    }, 60_000);

    it('loses neither the question nor the transcript', async () => {
      expect((await world.run(asking)).status).toBe('waiting');
      const after = (await world.conversation(asking))!;
      expect(after.question).toBe(QUESTION);
      expect(after.transcript_bytes).toBe(before.transcript_bytes);
      expect(Buffer.from(after.transcript as Uint8Array).equals(Buffer.from(before.transcript as Uint8Array))).toBe(true);
      expect(world.botComments(1).filter((c) => c.body.includes('has a question'))).toHaveLength(1);
    }, 60_000);

    it('does not resume on a read-only user’s comment', async () => {
      const delivery = await world.comment(1, 'rita', 'Use SQLite.');
      expect(delivery.outcome).toBe('not_permitted');
      expect((await world.run(asking)).status).toBe('waiting');
    }, 60_000);
  });

  describe('a write user’s reply, and serve killed (-9) while the resumed turn runs', () => {
    let reply: Delivery;
    beforeAll(async () => {
      reply = await world.comment(1, 'alice', 'Use PostgreSQL.');
      // The resumed turn is running in a fresh workspace: kill the server under it.
      await until(async () => {
        const row = await world.run(asking);
        if (TERMINAL.includes(row.status))
          throw new Error(`run ${asking} ended ${row.status}: ${row.last_error}\n${world.server.output()}`);
        return row.status === 'running' && row.agent_attempt === 2;
      }, 'the resumed turn to run');
      await world.killAndRestart();
    }, 120_000);

    it('resumes the same session from the transcript and ends with the agent’s answer on the issue', async () => {
      expect(reply.outcome).toBe('started');
      const done = await world.finished(asking);
      expect(done.status, `${done.last_error}\n${world.server.output()}`).toBe('succeeded');
      const answer = await until(() => world.botComments(1).find((c) => c.body.includes('finished')), 'the final comment on #1');
      // The fake found its session file where it wrote it (else: "No conversation found with session ID").
      expect(answer.body).toMatch(
        new RegExp(`Answered after 1 question\\(s\\) in session ${sessionId} \\(\\d+ entries restored\\): Use PostgreSQL\\.`),
      );
      const statuses = await world.statusPath(asking);
      expect(statuses.slice(statuses.indexOf('waiting'))).toEqual(expect.arrayContaining(['waiting', 'queued', 'running', 'succeeded']));
      expect(statuses.at(-1)).toBe('succeeded');
      // Both turns count: the fake reports $0.0124 a turn.
      expect(done.cost_usd).toBeCloseTo(0.0248, 4);
      const kept = (await world.conversation(asking))!;
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
      const printed = await runBaton(['logs', String(asking), '--transcript'], {
        env: { BATON_URL: world.server.url, BATON_TOKEN: API_TOKEN },
      });
      expect(printed.code, printed.stderr).toBe(0);
      expect(printed.stdout).toContain(`run #${asking} analyse #1 · succeeded · 2 turn(s) · $0.0248`);
      expect(printed.stdout).toContain("── turn 1 · baton's prompt ──");
      expect(printed.stdout).toMatch(/ {2}▸ Bash \{"command":"baton ask /);
      expect(printed.stdout).toContain(`  > ${QUESTION}`);
      expect(printed.stdout).toContain('── turn 2 · reply from @alice ──\n  Use PostgreSQL.');
      expect(printed.stdout).toMatch(/\(turn 2: \$0\.0124 · [\d,]+ tokens · /);
    }, 180_000);
  });

  it('parks as well on a question asked through baton’s MCP tool (Claude Code’s --mcp-config), and resumes on the reply', async () => {
    const id = await world.open(5);
    await world.until(id, 'waiting');
    const question = await until(() => world.botComments(5).find((c) => c.body.includes('has a question')), 'the question on #5');
    expect(question.body).toContain(`> ${QUESTION}`);
    expect((await world.conversation(id))!.question).toBe(QUESTION);
    expect((await world.comment(5, 'alice', 'SQLite is enough.')).outcome).toBe('started');
    const done = await world.finished(id);
    expect(done.status, `${done.last_error}\n${world.server.output()}`).toBe('succeeded');
    const answer = await until(() => world.botComments(5).find((c) => c.body.includes('finished')), 'the final comment on #5');
    expect(answer.body).toMatch(/Answered after 1 question\(s\) in session [0-9a-f-]{36} \(\d+ entries restored\): SQLite is enough\./);
    // The tool call and what `baton mcp` answered, as people read the conversation.
    const printed = await runBaton(['logs', String(id), '--transcript'], { env: { BATON_URL: world.server.url, BATON_TOKEN: API_TOKEN } });
    expect(printed.stdout).toMatch(/ {2}▸ mcp__baton__ask \{"question":"Which database/);
    expect(printed.stdout).toContain('Question recorded. Now end your turn');
  }, 180_000);

  describe('a question nobody answers', () => {
    // The same server again, with a reply wait of 3.6 s and a sweep every 3 s.
    beforeAll(() => world.killAndRestart({ RUN_REPLY_WAIT_HOURS: '0.001', SWEEP_MINUTES: '0.05' }), 60_000);

    it('ends the run expired, with a comment on the issue', async () => {
      const unanswered = await world.open(3);
      await until(async () => ['waiting', 'expired'].includes((await world.run(unanswered)).status), `run ${unanswered} to wait`);
      const done = await world.finished(unanswered);
      expect(done.status, `${done.last_error}\n${world.server.output()}`).toBe('expired');
      const expired = await until(() => world.botComments(3).find((c) => c.body.includes('ended `expired`')), 'the expiry comment on #3');
      expect(expired.body).toContain('waited for a reply to its question and got none in time');
      expect(world.botComments(3).some((c) => c.body.includes('has a question'))).toBe(true);
      expect(await world.statusPath(unanswered)).toEqual(expect.arrayContaining(['running', 'waiting', 'expired']));
    }, 120_000);
  });

  describe('ChatOps through serve', () => {
    it('answers a write user’s status, a read-only user’s command and an unknown command', async () => {
      const status = await world.comment(1, 'alice', '@baton status');
      expect(status.outcome).not.toBe('not_permitted');
      const table = await until(() => world.botComments(1).find((c) => c.body.startsWith('Status of #1')), 'the status reply');
      // The whole conversation is one run, its cost both turns'.
      expect(table.body).toContain(`| ${asking} | \`analyse\` | succeeded |`);
      expect(table.body).toContain('$0.02');
      const refused = await world.comment(4, 'rita', '@baton cancel');
      expect(refused.outcome).toBe('not_permitted');
      const refusal = await until(
        () => world.botComments(4).find((c) => c.body.includes('@rita only people with write access to acme/app can give baton commands')),
        'the refusal',
      );
      expect(refusal.body.split('\n')[0]).toBe(
        "@rita only people with write access to acme/app can give baton commands; nothing was run. See baton's docs/troubleshooting.md#permission-failures.",
      );
      await world.comment(4, 'alice', '@baton frobnicate');
      const help = await until(
        () => world.botComments(4).find((c) => c.body.includes("I don't know the command `frobnicate`")),
        'the help reply',
      );
      expect(help.body).toContain('`@baton retry`');
    }, 60_000);
  });
});
