import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_TOKEN, startConversationServe, type ConversationServe } from '../helpers/conversation-serve.js';
import { until } from '../helpers/until.js';

/**
 * Several questions in one run through the real `baton serve` (the world of conversation.test.ts):
 * the fake Claude Code asks with `baton ask` on its first two turns and answers on the third. Each
 * question parks the run, each reply from a write user resumes the same session from the
 * transcript baton kept, and the run ends with the answer; the conversation API shows both
 * questions and both replies, and the run's cost, the day's budget and the token cap count all
 * three turns.
 */

const QUESTION = 'Which database should the service use?';
/**
 * What the fake reports per turn: input 300 + 5 and output 60 + 1 tokens over its two models (the
 * cap and budgets count these; cache reads and writes they do not), $0.0124.
 */
const TURN_TOKENS = 366;
const TURN_COST = 0.0124;
const CAP = 100_000;

describe('baton serve: a run that asks twice, each question a turn', () => {
  let world: ConversationServe;
  const api = (pathname: string) =>
    fetch(`${world.server.url}${pathname}`, { headers: { authorization: `Bearer ${API_TOKEN}` } }).then(async (res) => {
      expect(res.status, pathname).toBe(200);
      return (await res.json()) as Record<string, unknown>;
    });
  const questions = (number: number) => world.botComments(number).filter((c) => c.body.includes('has a question'));
  /** Today's tokens of the global budget, as `GET /api/budgets` shows them. */
  const budgetUsed = async () =>
    ((await api('/api/budgets')) as { budgets: { scope: string; tokens: { used: number } }[] }).budgets.find((b) => b.scope === 'global')
      ?.tokens.used;

  beforeAll(async () => {
    world = await startConversationServe({
      name: 'conversation-turns',
      settings: { modeByIssue: { '1': 'ask', '2': 'ask' }, question: QUESTION, askTurns: 2 },
      issues: 2,
      env: { BATON_TOKEN_CAP: String(CAP), BUDGET_TOKENS_PER_DAY: '10000000' },
    });
  }, 60_000);
  afterAll(() => world?.close(), 60_000);

  let runId: number;

  it('parks on the first question, resumes on the reply and parks again on the second', async () => {
    runId = await world.open(1);
    await world.until(runId, 'waiting');
    await until(() => questions(1).length === 1, 'the first question on #1');
    expect(questions(1)[0]!.body).toContain(`> ${QUESTION} (turn 1)`);
    // What the turn spent counts today, while the run waits (and if it never resumes).
    expect(await budgetUsed()).toBe(TURN_TOKENS);

    const reply = await world.comment(1, 'alice', 'Use PostgreSQL.');
    expect(reply.outcome).toBe('started');
    await world.until(runId, 'waiting', (row) => row.agent_attempt === 2);
    await until(() => questions(1).length === 2, 'the second question on #1');
    expect(questions(1)[1]!.body).toContain(`> ${QUESTION} (turn 2)`);
    const kept = (await world.conversation(runId))!;
    expect(kept).toMatchObject({ question: `${QUESTION} (turn 2)`, reply: null });
    expect(await budgetUsed()).toBe(2 * TURN_TOKENS);
    // The second turn ran with what the first left of the cap.
    expect((await world.run(runId)).token_cap).toBe(CAP - TURN_TOKENS);
  }, 180_000);

  it('resumes the same session on the second reply and ends with the answer on the issue', async () => {
    const reply = await world.comment(1, 'alice', 'Version 16, please.');
    expect(reply.outcome).toBe('started');
    const done = await world.finished(runId);
    expect(done.status, `${done.last_error}\n${world.server.output()}`).toBe('succeeded');
    const sessionId = (await world.conversation(runId))!.session_id as string;
    const answer = await until(() => world.botComments(1).find((c) => c.body.includes('finished')), 'the final comment on #1');
    // The fake found the session of both earlier turns where it wrote them.
    expect(answer.body).toMatch(
      new RegExp(`Answered after 2 question\\(s\\) in session ${sessionId} \\(\\d+ entries restored\\): Version 16, please\\.`),
    );
    expect(questions(1)).toHaveLength(2);
    const statuses = await world.statusPath(runId);
    expect(statuses.filter((s) => s === 'waiting')).toHaveLength(2);
    expect(statuses.at(-1)).toBe('succeeded');
    // The third turn's cap is what the two before left.
    expect(done.token_cap).toBe(CAP - 2 * TURN_TOKENS);
  }, 180_000);

  it('shows both questions and both replies, turn by turn, in the conversation API', async () => {
    const view = await api(`/api/runs/${runId}/conversation`);
    const turns = view.turns as { turn: number; by: string; reply: string | null; question: string | null; costUsd: number }[];
    expect(turns.map((t) => [t.turn, t.by, t.reply, t.question])).toEqual([
      [1, 'baton', null, `${QUESTION} (turn 1)`],
      [2, 'alice', 'Use PostgreSQL.', `${QUESTION} (turn 2)`],
      [3, 'alice', 'Version 16, please.', null],
    ]);
    for (const turn of turns) expect(turn.costUsd).toBeCloseTo(TURN_COST, 4);
    expect(view).toMatchObject({ status: 'succeeded', waiting: null, reply: null });
  }, 60_000);

  it('counts all three turns in the run’s cost and tokens and in the day’s budget', async () => {
    const { run } = (await api(`/api/runs/${runId}`)) as { run: { costUsd: number; tokens: number } };
    expect(run.costUsd).toBeCloseTo(3 * TURN_COST, 4);
    expect(run.tokens).toBe(3 * TURN_TOKENS);
    // Each turn once: the end adds only the last turn to what the two parks counted.
    expect(await budgetUsed()).toBe(3 * TURN_TOKENS);
  }, 60_000);

  describe('a token cap the whole conversation goes over', () => {
    // Room for the two asking turns and less than the answering turn's first message (240 tokens).
    beforeAll(() => world.killAndRestart({ BATON_TOKEN_CAP: String(2 * TURN_TOKENS + 100) }), 60_000);

    it('stops the third turn: the cap counts the turns before', async () => {
      const id = await world.open(2);
      await world.until(id, 'waiting');
      await world.comment(2, 'alice', 'Use SQLite.');
      await world.until(id, 'waiting', (row) => row.agent_attempt === 2);
      await world.comment(2, 'alice', 'Any version.');
      const done = await world.finished(id);
      expect(done.status, `${done.last_error}\n${world.server.output()}`).toBe('failed');
      expect(done.last_error).toBe('token_cap');
      expect(done.token_cap).toBe(100);
      const failed = await until(() => world.botComments(2).find((c) => c.body.includes('failed')), 'the failure comment on #2');
      expect(failed.body).toContain("The agent reached the run's token limit.");
    }, 240_000);
  });
});
