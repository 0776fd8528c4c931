import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { checkClaim, type RefusedClaim } from '../budgets/index.js';
import { maskUrlCredentials } from '../config-schema/index.js';
import type { Logger } from '../log/index.js';
import {
  addUsage,
  holdsSlot,
  type Question,
  OUTCOME_STATUSES,
  type CallbackTokenChecks,
  type RunService,
  type RunQueries,
  type ProgressBatch,
  type Run,
  type RunOutcome,
  type Usage,
} from '../runs/index.js';
import { MAX_PROMPT_CHARS, SESSION_ID_FORM } from '../runner-contract/index.js';
import { limitBody, HttpError } from '../web-kit/index.js';

/** Largest callback or progress body a workspace may send. */
const MAX_BODY_BYTES = 1024 * 1024;
const MAX_LINES_PER_BATCH = 1_000;
/** Largest transcript upload (JSONL, before baton compresses it). */
const MAX_TRANSCRIPT_UPLOAD = 64 * 1024 * 1024;

type CallbackEnv = { Variables: { run: Run } };

/**
 * A callback with no token at all is a workspace made from another template, most likely the
 * original orchestrator's (which posts `{"status":"complete"}` without one). It names no run, so
 * saying so reveals nothing about which runs exist.
 */
export const MISSING_CALLBACK_TOKEN =
  "missing callback token: the workspace must be created from baton's template (deploy/coder/), which passes each run's " +
  'callback token to baton agent; the original orchestrator\'s template does not. See docs/migrating.md ("Workspaces and callbacks")';

export interface CallbackRoutesOptions {
  /** The changes a workspace asks for: progress, its transcript, a question, the completion. */
  engine: Pick<RunService, 'appendProgress' | 'storeTranscript' | 'park' | 'complete'>;
  /** The legacy callback's run by workspace name; the transcript and conversation of a resumed run. */
  runs: Pick<RunQueries, 'findByWorkspace' | 'transcript' | 'conversation'>;
  /** Which run a callback token speaks for. */
  callbackTokens: Pick<CallbackTokenChecks, 'verifyCallbackToken'>;
  logger: Logger;
  /** Checks a claimed success against the forge (success is an outcome); may turn it into a failure. */
  checkOutcome?: (run: Run, outcome: RunOutcome) => Promise<RunOutcome>;
}

/**
 * The workspace's side of a run: progress batches and the completion callback, each authenticated
 * by the run's own callback token (only its hash is stored). `POST /webhook/task-complete/:name`
 * is the original orchestrator's path, keyed by workspace name.
 */
export function callbackRoutes(options: CallbackRoutesOptions): Hono<CallbackEnv> {
  const { engine, runs, callbackTokens, logger, checkOutcome } = options;
  const app = new Hono<CallbackEnv>();
  // The token first (security checks come first), then the size, then the body.
  const byId = callbackToken(callbackTokens, async (c) => parseRunId(c.req.param('id') ?? ''));
  // Unknown names get the same 401 as wrong tokens: the answer must not reveal which runs exist.
  const byName = callbackToken(callbackTokens, async (c) => (await runs.findByWorkspace(c.req.param('name') ?? ''))?.id ?? null);
  const limit = limitBody(MAX_BODY_BYTES);

  app.post('/api/runs/:id/complete', byId, limit, (c) => complete(c, c.get('run')));
  app.post('/webhook/task-complete/:name', byName, limit, (c) => complete(c, c.get('run')));

  app.post('/api/runs/:id/progress', byId, limit, async (c) => {
    const run = c.get('run');
    const body = await readJson(c);
    const lines = body.lines;
    if (lines !== undefined && (!Array.isArray(lines) || !lines.every((l) => typeof l === 'string'))) {
      throw new HttpError(400, 'invalid_body', 'lines must be an array of strings');
    }
    const refused: RefusedClaim[] = [];
    const batch: ProgressBatch = { lines: (lines ?? []).slice(0, MAX_LINES_PER_BATCH) };
    const usage = optionalUsage(body.usage, refused);
    if (usage) batch.usage = usage;
    const costUsd = checkClaim(body.costUsd, 'costUsd', 'progress costUsd', refused);
    if (costUsd !== null) batch.costUsd = costUsd;
    const prompt = parsePrompt(body.prompt);
    if (prompt) batch.prompt = prompt;
    // What was refused goes into the run's own log, after the lines it came with.
    batch.lines.push(...refusalLines(run, refused));
    if (!holdsSlot(run.status)) {
      return c.json({ ok: true, accepted: false, reason: `run ${run.id} is ${run.status}` }, 202);
    }
    // The stored log is bounded per run (runLog.maxBytes): head and tail kept, a marker between.
    await engine.appendProgress(run.id, batch);
    return c.json({ ok: true, accepted: true }, 202);
  });

  // The session transcript of a conversation: uploaded before the runner reports a question,
  // read back by the runner of the next turn to restore it where the agent CLI looks for it.
  app.put('/api/runs/:id/transcript', byId, limitBody(MAX_TRANSCRIPT_UPLOAD), async (c) => {
    const run = c.get('run');
    if (!holdsSlot(run.status)) throw new HttpError(409, 'conflict', `run ${run.id} is ${run.status}`);
    const jsonl = Buffer.from(await c.req.arrayBuffer());
    const stored = await engine.storeTranscript(run.id, jsonl).catch((err: unknown) => {
      throw new HttpError(413, 'too_large', err instanceof Error ? err.message : String(err));
    });
    return c.json({ ok: true, bytes: jsonl.length, storedBytes: stored });
  });
  app.get('/api/runs/:id/transcript', byId, async (c) => {
    const run = c.get('run');
    const jsonl = await runs.transcript(run.id);
    if (!jsonl) throw new HttpError(404, 'not_found', `run ${run.id} has no transcript`);
    return c.body(new Uint8Array(jsonl), 200, { 'content-type': 'application/x-ndjson' });
  });

  /**
   * A resumed run's last turn reports its own usage and time: the turns before count too (budgets,
   * the record, the finished comment); their agent time is `payload.resume.msBefore`.
   */
  async function withEarlierTurns(run: Run, outcome: RunOutcome): Promise<RunOutcome> {
    if (run.agentAttempt <= 1) return outcome;
    const conversation = await runs.conversation(run.id);
    if (!conversation) return outcome;
    const msBefore = (run.payload.resume as { msBefore?: unknown } | undefined)?.msBefore;
    const earlierMs = typeof msBefore === 'number' && Number.isFinite(msBefore) && msBefore > 0 ? msBefore : 0;
    return {
      ...outcome,
      usage: addUsage(conversation.usage, outcome.usage ?? null),
      costUsd: conversation.costUsd + (outcome.costUsd ?? 0),
      ...(typeof outcome.durationMs === 'number' ? { durationMs: outcome.durationMs + earlierMs } : {}),
    };
  }

  /** Lines for the run's log naming each refused claim; the server's log gets one warning per batch. */
  function refusalLines(run: Run, refused: RefusedClaim[]): string[] {
    if (refused.length === 0) return [];
    logger.warn({ runId: run.id, key: run.key, fields: refused.map((r) => r.field) }, 'refused usage or cost claimed by a workspace');
    return refused.map((r) => r.line);
  }

  async function complete(c: Context, run: Run) {
    const body = await readJson(c);
    const refused: RefusedClaim[] = [];
    const asked = parseQuestion(body.question);
    if (asked && holdsSlot(run.status)) {
      // The agent asked instead of finishing: the run waits for a reply, without its workspace.
      const outcome = parseOutcome({ ...body, status: body.status ?? 'succeeded' }, refused);
      const waiting = await engine.park(run.id, asked, outcome);
      logger.info({ runId: run.id, key: run.key, status: waiting.status }, 'run waits for a reply to its question');
      return c.json({ ok: true, runId: run.id, status: waiting.status, changed: true });
    }
    const claimed = await withEarlierTurns(run, parseOutcome(body, refused));
    if (refused.length > 0 && holdsSlot(run.status)) await engine.appendProgress(run.id, { lines: refusalLines(run, refused) });
    // Only a live run's claim is checked: a repeated completion changes nothing anyway.
    const outcome = checkOutcome && holdsSlot(run.status) ? await checkOutcome(run, claimed) : claimed;
    if (outcome !== claimed && outcome.status !== claimed.status) {
      logger.warn({ runId: run.id, key: run.key, error: outcome.error }, 'the agent claimed success without its outcome');
      await engine.appendProgress(run.id, { lines: [`[baton] ${outcome.error ?? ''}`] });
    }
    const { run: after, changed } = await engine.complete(run.id, outcome);
    logger.info({ runId: run.id, key: run.key, status: after.status, changed }, changed ? 'run completed' : 'repeated completion ignored');
    return c.json({ ok: true, runId: after.id, status: after.status, changed });
  }

  return app;
}

/** The run's own callback token (only its hash is stored); the run it names goes into `c.get('run')`. */
function callbackToken(
  tokens: CallbackRoutesOptions['callbackTokens'],
  runIdOf: (c: Context) => Promise<number | null>,
): MiddlewareHandler<CallbackEnv> {
  return async (c, next) => {
    const header = c.req.header('authorization');
    // The original orchestrator's template calls back without a token: say what to change.
    if (header === undefined || header.trim() === '') throw new HttpError(401, 'unauthorized', MISSING_CALLBACK_TOKEN);
    const match = /^Bearer\s+(\S+)$/i.exec(header);
    const runId = match ? await runIdOf(c) : null;
    const run = match && runId !== null ? await tokens.verifyCallbackToken(runId, match[1]!) : null;
    if (!run) throw new HttpError(401, 'unauthorized', 'missing or invalid callback token');
    c.set('run', run);
    await next();
  };
}

/** The completion's `question` (the agent asked): `{ text, sessionId, for? }`, or null when absent. */
function parseQuestion(value: unknown): Question | null {
  if (value === undefined || value === null) return null;
  const q = value as Record<string, unknown>;
  if (typeof value !== 'object' || typeof q.text !== 'string' || q.text.trim() === '' || typeof q.sessionId !== 'string') {
    throw new HttpError(400, 'invalid_body', 'question must be { text, sessionId, for? } with a non-empty text');
  }
  if (!SESSION_ID_FORM.test(q.sessionId)) throw new HttpError(400, 'invalid_body', 'question.sessionId must be a session id');
  const forWhom = typeof q.for === 'string' && /^[\w.@-]{1,80}$/.test(q.for) ? q.for : null;
  return { text: q.text.trim(), sessionId: q.sessionId, for: forWhom };
}

function parseRunId(raw: string): number | null {
  return /^\d{1,15}$/.test(raw) ? Number(raw) : null;
}

async function readJson(c: Context): Promise<Record<string, unknown>> {
  const text = await c.req.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new HttpError(400, 'invalid_json', `invalid JSON: ${(err as Error).message}`);
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new HttpError(400, 'invalid_body', 'body must be a JSON object');
  return parsed as Record<string, unknown>;
}

function parseOutcome(body: Record<string, unknown>, refused: RefusedClaim[]): RunOutcome {
  const status = body.status;
  if (typeof status !== 'string' || !(OUTCOME_STATUSES as readonly string[]).includes(status)) {
    throw new HttpError(400, 'invalid_body', `status must be one of ${OUTCOME_STATUSES.join(', ')}, got ${JSON.stringify(status ?? null)}`);
  }
  const num = (key: string): number | null => {
    const v = body[key];
    if (v === undefined || v === null) return null;
    if (typeof v !== 'number' || !Number.isFinite(v)) throw new HttpError(400, 'invalid_body', `${key} must be a number`);
    return v;
  };
  const str = (key: string, max: number): string | null => {
    const v = body[key];
    if (v === undefined || v === null) return null;
    if (typeof v !== 'string') throw new HttpError(400, 'invalid_body', `${key} must be a string`);
    // A runner repeating a clone or forge URL must not put its credentials into the run's record.
    return maskUrlCredentials(v.slice(0, max));
  };
  return {
    status: status as RunOutcome['status'],
    exitCode: num('exitCode'),
    summary: str('summary', 65_536),
    usage: optionalUsage(body.usage, refused, 'completion usage'),
    costUsd: checkClaim(body.costUsd, 'costUsd', 'completion costUsd', refused),
    // Only the two words: anything else (or none) leaves the engine's default for a cost, `reported`.
    costSource: body.costSource === 'computed' || body.costSource === 'reported' ? body.costSource : null,
    durationMs: num('durationMs'),
    error: str('error', 8_192),
  };
}

/**
 * The prompt a runner reports (`PromptReport`): kept as the run page shows it, cut at
 * `MAX_PROMPT_CHARS`, with URL credentials masked in case a repository's command file holds one.
 */
function parsePrompt(raw: unknown): Record<string, unknown> | null {
  if (raw === undefined || raw === null) return null;
  const p = raw as Record<string, unknown>;
  if (typeof raw !== 'object' || Array.isArray(raw) || typeof p.text !== 'string')
    throw new HttpError(400, 'invalid_body', 'prompt must be { text, arguments, source, file, model }');
  const short = (value: unknown, max: number): string | null =>
    typeof value === 'string' ? maskUrlCredentials(value.slice(0, max)) : null;
  return {
    text: maskUrlCredentials(p.text.slice(0, MAX_PROMPT_CHARS)),
    ...(p.text.length > MAX_PROMPT_CHARS ? { cut: true } : {}),
    arguments: short(p.arguments, 16 * 1024) ?? '',
    source: p.source === 'repository' || p.source === 'built-in' ? p.source : null,
    file: short(p.file, 300),
    model: short(p.model, 200),
  };
}

/** Most keys a usage object may carry (the runner sends four). */
const MAX_USAGE_KEYS = 16;

/** Token counts the workspace claims: each checked; a refused one is left out (it counts as 0). */
function optionalUsage(raw: unknown, refused: RefusedClaim[], where = 'progress usage'): Usage | null {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return null;
  const usage: Usage = {};
  for (const [key, value] of Object.entries(raw).slice(0, MAX_USAGE_KEYS)) {
    const claimed = checkClaim(value, 'tokens', `${where}.${/^\w{1,64}$/.test(key) ? key : JSON.stringify(key.slice(0, 64))}`, refused);
    if (claimed !== null) usage[key] = claimed;
  }
  return usage;
}
