import fs from 'node:fs';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startConversationServe, type ConversationAgent, type ConversationServe } from '../helpers/conversation-serve.js';
import { until } from '../helpers/until.js';

/**
 * A conversation on each of the other first-class agents, through the real `baton serve` with
 * local workspaces in the real sandbox and the real `baton agent` (conversation.test.ts holds
 * Claude Code's, with the restarts): the agent's fake CLI (fake-codex.mjs, fake-gemini.mjs,
 * fake-opencode.mjs) keeps its session where the real CLI does and refuses to resume one it cannot
 * find there (SOURCES.md). The agent runs `baton ask` through its shell tool; the run parks
 * without its workspace, keeping the CLI's session files; a write user's reply resumes the same
 * session in a fresh workspace (the CLI finds it only because baton restored its files) and the
 * answer ends up on the issue, both turns counted.
 */

const QUESTION = 'Which queue should the worker read, Redis or PostgreSQL?';

/** Each agent's session: its id's form, where its files live under HOME, and what each turn costs. */
const AGENTS: Record<
  ConversationAgent,
  { id: RegExp; files: (id: string) => RegExp[]; restored: string; costUsd: number; costSource: string }
> = {
  codex: {
    id: /^[0-9a-f-]{36}$/,
    files: (id) => [new RegExp(`"file":"\\.codex/sessions/\\d{4}/\\d\\d/\\d\\d/rollout-[\\dT-]+-${id}\\.jsonl"`)],
    restored: 'rollout lines restored',
    // 1,000 fresh + 1,000 cached in and 100 out at gpt-5-codex's price, each turn, priced by baton.
    costUsd: 2 * ((1_000 * 1.25 + 1_000 * 0.125 + 100 * 10) / 1e6),
    costSource: 'computed',
  },
  gemini: {
    id: /^[0-9a-f-]{36}$/,
    // The project of the sandbox's fixed working directory (/workspace/app), and the registry.
    files: (id) => [
      new RegExp(`"file":"\\.gemini/tmp/app/chats/session-[\\dT-]+-${id.slice(0, 8)}\\.jsonl"`),
      /"file":"\.gemini\/projects\.json"/,
    ],
    restored: 'messages restored',
    // 2,000 fresh + 1,000 cached in and 120 out at gemini-2.5-flash's price, each turn.
    costUsd: 2 * ((2_000 * 0.3 + 1_000 * 0.075 + 120 * 2.5) / 1e6),
    costSource: 'computed',
  },
  opencode: {
    id: /^ses_[0-9a-f]{26}$/,
    files: (id) => [new RegExp(`"file":"\\.local/share/opencode/storage/session/${id}\\.json"`)],
    restored: 'messages restored',
    // OpenCode's own $0.0075 a turn (the price table's $0.0078 for its tokens agrees).
    costUsd: 2 * 0.0075,
    costSource: 'reported',
  },
};

describe.each(Object.keys(AGENTS) as ConversationAgent[])('baton serve: a conversation on %s', (agent) => {
  const expected = AGENTS[agent];
  let world: ConversationServe;
  let asking: number;
  let sessionId: string;

  beforeAll(async () => {
    world = await startConversationServe({
      name: `conversation-${agent}`,
      agent,
      settings: { modeByIssue: { '1': 'ask' }, question: QUESTION },
      issues: 1,
    });
  }, 60_000);
  afterAll(() => world?.close(), 60_000);

  const workspaceDirs = () => {
    const dir = path.join(world.dataDir, 'workspaces');
    return fs.existsSync(dir) ? fs.readdirSync(dir) : [];
  };

  it('is ready without Claude Code: /ready checks the agents the stages use, here only its own', async () => {
    await until(async () => (await fetch(`${world.server.url}/ready`)).ok, '/ready to answer 200');
  }, 120_000);

  it('parks the run on the question: posted on the issue, the CLI’s session files kept, workspace gone', async () => {
    asking = await world.open(1);
    await world.until(asking, 'waiting');
    expect((await world.run(asking)).workspace_name).toBeNull();
    const question = await until(() => world.botComments(1).find((c) => c.body.includes('has a question')), 'the question on #1');
    expect(question.body).toContain(`> ${QUESTION}`);

    const kept = (await world.conversation(asking))!;
    sessionId = kept.session_id as string;
    expect(sessionId).toMatch(expected.id);
    expect(kept.question).toBe(QUESTION);
    const transcript = gunzipSync(Buffer.from(kept.transcript as Uint8Array)).toString();
    expect(JSON.parse(transcript.split('\n')[0]!)).toMatchObject({ format: 'baton-transcript', agent, cwd: '/workspace/app', sessionId });
    for (const file of expected.files(sessionId)) expect(transcript).toMatch(file);
    await until(() => workspaceDirs().length === 0, 'the asking run’s workspace to be removed');
  }, 120_000);

  it('resumes its own session from the restored files on a write user’s reply, and ends with the answer on the issue', async () => {
    const reply = await world.comment(1, 'alice', 'Use PostgreSQL.');
    expect(reply.outcome).toBe('started');
    const done = await world.finished(asking);
    expect(done.status, `${done.last_error}: ${done.summary}\n${world.server.output().slice(-4000)}`).toBe('succeeded');
    expect(done.agent_attempt).toBe(2);
    const answer = await until(() => world.botComments(1).find((c) => c.body.includes('finished')), 'the final comment on #1');
    // The fake resumed the session it found in the restored files (else it refuses and exits 1, or 42).
    expect(answer.body).toMatch(
      new RegExp(`Answered in (thread|session) ${sessionId} \\([1-9]\\d* ${expected.restored}\\): Use PostgreSQL\\.`),
    );
    // Both turns count, the cost as the agent's is: reported by the CLI or priced by baton.
    expect(done).toMatchObject({ cost_source: expected.costSource });
    expect(Number(done.cost_usd)).toBeCloseTo(expected.costUsd, 6);
    const turns = await world.keptTurns(asking);
    expect(turns.map((t) => [t.turn, t.by, t.question])).toEqual([
      [1, 'baton', QUESTION],
      [2, 'alice', null],
    ]);
    expect(turns[0]!.stream.join('\n')).toContain('baton ask');
  }, 120_000);
});
