import { gunzipSync, gzipSync } from 'node:zlib';
import type { Kysely } from 'kysely';
import type { Database, TransactionScope } from '../store/index.js';
import { TransitionError } from './errors.js';
import { toRun } from './rows.js';
import { canTransition, RUN_EVENT, RUN_STATUS } from './states.js';
import { recordTransition, scheduleTeardown, selectRun, type TransitionContext } from './transition.js';
import type { Run, RunOutcome, Usage } from './types.js';
import { totalTokens } from './usage.js';

/**
 * Conversations: an agent that asks a question parks its run (`waiting`): the question is kept,
 * with the agent CLI's session id and its transcript, the workspace is torn down and the slot
 * freed. The next reply from a person with write access resumes it (`queued`, the next agent
 * attempt in a new workspace), where the runner restores the transcript and resumes the session
 * with the reply as its prompt. No reply within the wait ends it `expired`.
 *
 * Usage of the turns before is kept here and added to each later turn's, so budgets, the run's
 * record and the token cap count the whole conversation; the agent's time of the turns before
 * (`payload.resume.msBefore`) is what the duration limit of the next turn leaves out.
 */

/** Longest question or reply kept (and posted). */
export const MAX_QUESTION_CHARS = 8_000;
/** Largest transcript kept per run (gzip'd); a bigger one is refused, and the run cannot resume. */
export const MAX_TRANSCRIPT_BYTES = 16 * 1024 * 1024;

export interface RunConversationsTable {
  run_id: number;
  session_id: string | null;
  question: string | null;
  asked_for: string | null;
  asked_at: number | null;
  reply: string | null;
  reply_by: string | null;
  replied_at: number | null;
  turns: number;
  usage: string | null;
  cost_usd: number;
  transcript: Uint8Array | null;
  transcript_bytes: number;
  updated_at: number;
}

type ConversationDb = Kysely<Database & { run_conversations: RunConversationsTable }>;
const db = (trx: Kysely<Database>) => trx.withTables<{ run_conversations: RunConversationsTable }>() as ConversationDb;

export interface Conversation {
  runId: number;
  sessionId: string | null;
  /** The open question (null once replied). */
  question: string | null;
  askedFor: string | null;
  askedAt: number | null;
  reply: string | null;
  replyBy: string | null;
  repliedAt: number | null;
  /** Turns of the agent so far (1 = the first run). */
  turns: number;
  /** Usage of the turns before the current one (summed). */
  usage: Usage | null;
  costUsd: number;
  transcriptBytes: number;
}

/** What a runner reports when its agent asked instead of finishing. */
export interface Question {
  text: string;
  /** The agent CLI's session id, to resume. */
  sessionId: string;
  /** Whom the question is for (a login or a role), when the stage says. */
  for?: string | null;
}

export interface ConversationOps {
  /** running | provisioning → waiting, with the question and the turn's usage; the workspace goes. */
  park(scope: TransactionScope, run: Run, question: Question, outcome: RunOutcome): Promise<Run>;
  /** waiting → queued with the reply as the next turn's prompt (the next agent attempt). */
  resumeIn(scope: TransactionScope, runId: number, reply: { text: string; by: string }): Promise<Run>;
  /** Waiting runs asked before `askedBefore` → expired. Returns them. */
  expireIn(scope: TransactionScope, askedBefore: number): Promise<Run[]>;
}

export function createConversationOps(ctx: TransitionContext, dialect: 'sqlite' | 'postgres'): ConversationOps {
  return {
    async park(scope, run, question, outcome) {
      if (!canTransition(run.status, RUN_STATUS.waiting)) {
        throw new TransitionError(`run ${run.id} is ${run.status}; only a running run can wait for a reply`, 'conflict');
      }
      const t = ctx.now();
      const text = question.text.slice(0, MAX_QUESTION_CHARS);
      const row = await scope.trx
        .updateTable('runs')
        .set({
          status: RUN_STATUS.waiting,
          summary: outcome.summary ?? null,
          exit_code: outcome.exitCode ?? null,
          lease_token: null,
          lease_expires_at: null,
          workspace_name: null,
          workspace_id: null,
          callback_token_hash: null,
          updated_at: t,
        })
        .where('id', '=', run.id)
        .returningAll()
        .executeTakeFirstOrThrow();
      const before = await db(scope.trx).selectFrom('run_conversations').select('usage').where('run_id', '=', run.id).executeTakeFirst();
      const usage = JSON.stringify(addUsage(before?.usage ? (JSON.parse(before.usage) as Usage) : null, outcome.usage ?? null));
      const values = {
        session_id: question.sessionId,
        question: text,
        asked_for: question.for ?? null,
        asked_at: t,
        reply: null,
        reply_by: null,
        replied_at: null,
        updated_at: t,
      };
      await db(scope.trx)
        .insertInto('run_conversations')
        .values({ run_id: run.id, ...values, turns: 1, usage, cost_usd: outcome.costUsd ?? 0, transcript_bytes: 0 })
        .onConflict((oc) =>
          oc.column('run_id').doUpdateSet((eb) => ({
            ...values,
            usage,
            cost_usd: eb('run_conversations.cost_usd', '+', outcome.costUsd ?? 0),
          })),
        )
        .execute();
      await scheduleTeardown(scope, ctx, run, t);
      const waiting = toRun(row);
      await recordTransition(scope, ctx, waiting, run.status, RUN_EVENT.waiting, {
        question: text,
        ...(question.for ? { for: question.for } : {}),
        usage: outcome.usage ?? null,
        costUsd: outcome.costUsd ?? null,
      });
      return waiting;
    },

    async resumeIn(scope, runId, reply) {
      const run = await selectRun(scope.trx, runId, dialect);
      if (!run) throw new TransitionError(`run ${runId} not found`, 'not_found');
      if (run.status !== RUN_STATUS.waiting)
        throw new TransitionError(`run ${runId} is ${run.status}, not waiting for a reply`, 'conflict');
      const t = ctx.now();
      const text = reply.text.slice(0, MAX_QUESTION_CHARS);
      const conversation = await db(scope.trx)
        .updateTable('run_conversations')
        .set((eb) => ({ reply: text, reply_by: reply.by, replied_at: t, turns: eb('turns', '+', 1), updated_at: t }))
        .where('run_id', '=', runId)
        .returning(['turns', 'session_id', 'usage'])
        .executeTakeFirst();
      // What the next workspace's runner needs to resume the session (server/workspaces.ts), and
      // the tokens of the turns before: the token cap counts the whole conversation.
      const before = conversation?.usage ? (JSON.parse(conversation.usage) as Usage) : null;
      // Input + output, as the cap counts them (cache reads and writes it does not).
      const tokensBefore = totalTokens(before) ?? 0;
      // The agent's time so far, for the duration limit: the turns before this one's, and this
      // one's from its start to its park (the run has not changed since; the wait is not counted).
      const earlier = run.payload.resume as { msBefore?: unknown } | undefined;
      const turnMs = run.startedAt !== null ? Math.max(0, run.updatedAt - run.startedAt) : 0;
      const msBefore = (typeof earlier?.msBefore === 'number' && Number.isFinite(earlier.msBefore) ? earlier.msBefore : 0) + turnMs;
      const payload = {
        ...run.payload,
        // `attempt`: where this turn starts among the agent's attempts (retries count per turn).
        resume: {
          sessionId: conversation?.session_id ?? null,
          prompt: text,
          by: reply.by,
          tokensBefore,
          msBefore,
          attempt: run.agentAttempt + 1,
        },
      };
      const row = await scope.trx
        .updateTable('runs')
        .set({
          status: RUN_STATUS.queued,
          agent_attempt: run.agentAttempt + 1,
          attempts: 0,
          run_at: t,
          payload: JSON.stringify(payload),
          claimed_at: null,
          updated_at: t,
        })
        .where('id', '=', runId)
        .returningAll()
        .executeTakeFirstOrThrow();
      const queued = toRun(row);
      await recordTransition(scope, ctx, queued, run.status, RUN_EVENT.resumed, { by: reply.by, turn: conversation?.turns ?? 2 });
      return queued;
    },

    async expireIn(scope, askedBefore) {
      const t = ctx.now();
      const rows = await scope.trx
        .selectFrom('runs')
        .selectAll()
        .where('status', '=', RUN_STATUS.waiting)
        .where('updated_at', '<', askedBefore)
        .orderBy('id')
        .limit(100)
        .execute();
      const expired: Run[] = [];
      for (const before of rows.map(toRun)) {
        const row = await scope.trx
          .updateTable('runs')
          .set({ status: RUN_STATUS.expired, last_error: 'no reply to its question in time', finished_at: t, updated_at: t })
          .where('id', '=', before.id)
          .where('status', '=', RUN_STATUS.waiting)
          .returningAll()
          .executeTakeFirst();
        if (!row) continue;
        const run = toRun(row);
        await recordTransition(scope, ctx, run, before.status, RUN_EVENT.expired, { waitedMs: t - before.updatedAt });
        expired.push(run);
      }
      return expired;
    },
  };
}

/** The conversation of a run, or null when its agent never asked. */
export async function readConversation(trx: Kysely<Database>, runId: number): Promise<Conversation | null> {
  const row = await db(trx)
    .selectFrom('run_conversations')
    .select([
      'run_id',
      'session_id',
      'question',
      'asked_for',
      'asked_at',
      'reply',
      'reply_by',
      'replied_at',
      'turns',
      'usage',
      'cost_usd',
      'transcript_bytes',
    ])
    .where('run_id', '=', runId)
    .executeTakeFirst();
  if (!row) return null;
  return {
    runId: Number(row.run_id),
    sessionId: row.session_id,
    question: row.reply === null ? row.question : null,
    askedFor: row.asked_for,
    askedAt: row.asked_at === null ? null : Number(row.asked_at),
    reply: row.reply,
    replyBy: row.reply_by,
    repliedAt: row.replied_at === null ? null : Number(row.replied_at),
    turns: Number(row.turns),
    usage: row.usage ? (JSON.parse(row.usage) as Usage) : null,
    costUsd: Number(row.cost_usd),
    transcriptBytes: Number(row.transcript_bytes),
  };
}

/**
 * A retried run starts afresh, from the stage prompt (operator-actions.ts): the conversation's
 * turns so far stop counting (their usage, the open question, the reply); the transcript stays
 * readable until the new first turn replaces it. Without this a retried run resumed the old
 * session, whose last turn kept no session files, and failed with "No conversation found".
 */
export async function forgetTurns(trx: Kysely<Database>, runId: number, now: number): Promise<void> {
  await db(trx)
    .updateTable('run_conversations')
    .set({
      question: null,
      asked_for: null,
      asked_at: null,
      reply: null,
      reply_by: null,
      replied_at: null,
      turns: 1,
      usage: null,
      cost_usd: 0,
      updated_at: now,
    })
    .where('run_id', '=', runId)
    .execute();
}

/** Keeps the session's transcript (JSONL text), gzip'd; the latest upload replaces the one before. */
export async function storeTranscript(trx: Kysely<Database>, runId: number, jsonl: Buffer, now: number): Promise<number> {
  const packed = gzipSync(jsonl);
  if (packed.length > MAX_TRANSCRIPT_BYTES) {
    throw new TransitionError(`the transcript of run ${runId} is ${packed.length} bytes gzip'd, over ${MAX_TRANSCRIPT_BYTES}`, 'conflict');
  }
  await db(trx)
    .insertInto('run_conversations')
    .values({ run_id: runId, transcript: packed, transcript_bytes: packed.length, turns: 1, cost_usd: 0, updated_at: now })
    .onConflict((oc) => oc.column('run_id').doUpdateSet({ transcript: packed, transcript_bytes: packed.length, updated_at: now }))
    .execute();
  return packed.length;
}

/** The transcript as uploaded (JSONL text), or null. */
export async function readTranscript(trx: Kysely<Database>, runId: number): Promise<Buffer | null> {
  const row = await db(trx).selectFrom('run_conversations').select('transcript').where('run_id', '=', runId).executeTakeFirst();
  return row?.transcript ? gunzipSync(Buffer.from(row.transcript)) : null;
}

const USAGE_KEYS = ['inputTokens', 'outputTokens', 'cacheReadInputTokens', 'cacheCreationInputTokens'] as const;

/** The sum of two turns' usage (the known token counts); null when neither has any. */
export function addUsage(a: Usage | null, b: Usage | null): Usage | null {
  if (!a) return b;
  if (!b) return a;
  const sum: Usage = {};
  for (const key of USAGE_KEYS) {
    const value = (typeof a[key] === 'number' ? a[key] : 0) + (typeof b[key] === 'number' ? b[key] : 0);
    if (typeof a[key] === 'number' || typeof b[key] === 'number') sum[key] = value;
  }
  return sum;
}
