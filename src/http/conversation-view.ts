import { transcriptEntries, type TranscriptEntry } from '../agents/index.js';
import { unpackTranscript, type TranscriptTurn } from '../agent/index.js';
import type { Conversation, Run, Usage } from '../runs/index.js';

/**
 * A run's conversation as people read it (`GET /api/runs/:id/conversation`, the dashboard,
 * `baton logs --transcript`): each turn of its agent, from the prompt it began with (the stage's,
 * or a person's reply) through the assistant's messages and tool calls to the question it ended
 * with, with what the turn cost. Built from the transcript the runner uploaded (agent/conversation.ts)
 * and the run's conversation row (runs/conversation.ts), which knows a reply the next turn has not
 * reported yet. The CLI's session files in the transcript are never part of it.
 */

export interface ConversationTurnView {
  turn: number;
  /** `baton` for the stage prompt, else the login whose reply began the turn. */
  by: string;
  /** What the agent got. */
  prompt: string;
  /** The person's reply as written (turns after the first). */
  reply: string | null;
  /** The question the turn ended with. */
  question: string | null;
  entries: TranscriptEntry[];
  usage: Usage | null;
  /** input + output tokens. */
  tokens: number | null;
  costUsd: number | null;
  startedAt: number | null;
  endedAt: number | null;
}

export interface RunConversationView {
  runId: number;
  stage: string;
  status: string;
  number: number | null;
  /** The agent whose stream this is (`claude`, …); null without a transcript. */
  agent: string | null;
  /** Whether baton keeps a transcript of the run (a run that never reached its agent has none). */
  kept: boolean;
  turns: ConversationTurnView[];
  /** The open question while the run waits for a reply. */
  waiting: { question: string; for: string | null; askedAt: number | null } | null;
  /** A reply taken whose turn has not ended yet (it is running, or queued to). */
  reply: { text: string; by: string; at: number | null } | null;
}

const tokensOf = (usage: Usage | null): number | null =>
  usage ? (Number(usage.inputTokens) || 0) + (Number(usage.outputTokens) || 0) : null;

function turnView(agent: string, turn: TranscriptTurn): ConversationTurnView {
  const { entries } = transcriptEntries(
    agent,
    Array.isArray(turn.stream) ? turn.stream.filter((l): l is string => typeof l === 'string') : [],
    turn.truncated && typeof turn.cutAt === 'number' ? { at: turn.cutAt, lines: Number(turn.cutLines) || 0 } : null,
  );
  const usage = turn.usage && typeof turn.usage === 'object' ? (turn.usage as Usage) : null;
  // A transcript from before turns carried their cost: the CLI's result says it.
  const result = entries.findLast((e) => e.kind === 'result');
  const costUsd =
    typeof turn.costUsd === 'number' ? turn.costUsd : result && result.kind === 'result' && result.costUsd !== null ? result.costUsd : null;
  const by = typeof turn.by === 'string' ? turn.by : 'baton';
  const prompt = typeof turn.prompt === 'string' ? turn.prompt : '';
  return {
    turn: Number(turn.turn),
    by,
    prompt,
    reply: typeof turn.reply === 'string' ? turn.reply : by === 'baton' ? null : prompt.replace(/^Reply from @[^\n]*\n\n/, ''),
    question: typeof turn.question === 'string' ? turn.question : null,
    entries,
    usage,
    tokens: tokensOf(usage),
    costUsd,
    startedAt: typeof turn.startedAt === 'number' ? turn.startedAt : null,
    endedAt: typeof turn.endedAt === 'number' ? turn.endedAt : null,
  };
}

/** The view of one run from its kept transcript (JSONL, or null) and conversation row. */
export function conversationView(run: Run, jsonl: Buffer | null, conversation: Conversation | null): RunConversationView {
  let agent: string | null = null;
  let turns: ConversationTurnView[] = [];
  if (jsonl) {
    try {
      const transcript = unpackTranscript(jsonl);
      agent = transcript.header.agent;
      turns = transcript.turns.map((turn) => turnView(transcript.header.agent, turn));
    } catch {
      // Not a transcript baton can read: shown as none rather than failing the page.
      turns = [];
    }
  }
  const waiting =
    run.status === 'waiting' && conversation?.question
      ? { question: conversation.question, for: conversation.askedFor, askedAt: conversation.askedAt }
      : null;
  // The reply that resumed the run, until the turn it began reports its end.
  const reply =
    conversation?.reply && conversation.turns > turns.length
      ? { text: conversation.reply, by: conversation.replyBy ?? '', at: conversation.repliedAt }
      : null;
  return {
    runId: run.id,
    stage: run.stage,
    status: run.status,
    number: run.number,
    agent,
    kept: jsonl !== null,
    turns,
    waiting,
    reply,
  };
}
