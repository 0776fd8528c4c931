import { Hono } from 'hono';
import { BRANCH_NAME_RULE, isBranchName, parseForgeRepository } from '../repositories/index.js';
import {
  ALL_STATUSES,
  RUN_EVENT,
  TransitionError,
  type EnqueueResult,
  type RunEngine,
  type RunFilter,
  type RunQueries,
  type RunStatus,
} from '../runs/index.js';
import type { AuthEnv } from './auth.js';
import { scopeAllows } from '../tokens/index.js';
import { limitBody, HttpError } from '../web-kit/index.js';
import { liveUsage, logLines, reportedPrompt, runView, type ForgeWebRoots } from '../live-events/index.js';

/** A manual run, its body checked: what `POST /api/runs` hands to the service that queues it. */
export interface RunSubmission {
  stage: string;
  /** GitHub or GitLab (`github:owner/repo`); absent for Gitea and Forgejo. */
  forge?: 'github' | 'gitlab';
  owner: string;
  repo: string;
  number?: number;
  arguments?: string;
  ref?: string;
}

/** Queues a manual run, or throws an `HttpError` saying why not (unknown stage, repository baton cannot clone). */
export type RunSubmitter = (run: RunSubmission, by: { tokenName: string }) => Promise<EnqueueResult>;

export interface RunsRoutesOptions {
  /** Operator actions: retry, cancel, pause, resume. */
  engine: Pick<RunEngine, 'retry' | 'cancel' | 'pause' | 'resume'>;
  runs: RunQueries;
  /** `POST /api/runs`; without it the route answers 404. */
  submit?: RunSubmitter;
  /** The configured forges' web roots, for the runs' links. */
  forges?: ForgeWebRoots;
  now: () => number;
}

const STATUSES: readonly string[] = ALL_STATUSES;
/** A submission is a few fields; anything near this is not one. */
const MAX_SUBMISSION_BYTES = 64 * 1024;
const MAX_ARGUMENTS_LENGTH = 16 * 1024;
const SUBMISSION_KEYS = ['stage', 'repository', 'number', 'issue', 'arguments', 'ref'];

/**
 * The runs API under /api (auth is applied by the app before these run). Documented in
 * docs/api.md, "Runs API"; keep the two in step.
 */
export function runsRoutes(options: RunsRoutesOptions): Hono<AuthEnv> {
  const { engine, runs: queries, forges = {}, now, submit } = options;
  const app = new Hono<AuthEnv>();

  if (submit) {
    app.post('/api/runs', limitBody(MAX_SUBMISSION_BYTES), async (c) => {
      // Scope: a POST needs an operate token, checked by the app's token middleware.
      const submission = parseSubmission(await readObject(c.req.raw));
      // Arguments reach the agent's prompt as they are: steering the agent with one's own words
      // is more than starting a stage, so it needs a scope of its own.
      const token = c.get('apiToken');
      if (submission.arguments !== undefined && !scopeAllows(token.scope, 'submit:arguments')) {
        throw new HttpError(
          403,
          'forbidden',
          `this token's scope is ${token.scope}; a submission with arguments (they go into the agent's prompt) needs submit:arguments ` +
            '(mint one with "baton token create --name NAME --scope submit:arguments")',
        );
      }
      const result = await submit(submission, { tokenName: c.get('apiToken').name });
      const reasons: Record<EnqueueResult['outcome'], string> = {
        queued: 'queued',
        coalesced: `coalesced into queued run ${result.run.id}`,
        followup: `run ${result.run.id} is in progress: one follow-up run will start after it`,
        dropped: `dropped: run ${result.run.id} is already in progress`,
      };
      return c.json(
        { run: runView(result.run, forges), outcome: result.outcome, reason: reasons[result.outcome] },
        result.outcome === 'queued' ? 201 : 200,
      );
    });
  }

  app.get('/api/runs', async (c) => {
    const filter = parseFilter(c.req.query());
    const limit = filter.limit!;
    const runs = await queries.list({ ...filter, limit: limit + 1 });
    const page = runs.slice(0, limit);
    return c.json({
      runs: page.map((r) => runView(r, forges)),
      nextCursor: runs.length > limit ? String(page[page.length - 1]!.id) : null,
    });
  });

  app.get('/api/runs/:id', async (c) => {
    const id = runId(c.req.param('id'));
    const run = await queries.get(id);
    if (!run) throw new HttpError(404, 'not_found', `run ${id} does not exist`);
    const events = await queries.events(id);
    return c.json({
      run: runView(run, forges),
      timeline: events.filter((e) => e.type !== RUN_EVENT.progress && e.type !== RUN_EVENT.prompt),
      log: logLines(events).join('\n'),
      // What the agent was asked (null until its runner has read the stage's prompt), and its
      // tokens and cost so far while it runs (null once it has its final figures).
      prompt: reportedPrompt(events),
      live: liveUsage(run, events),
      // Where a follower (`baton logs --follow`) resumes the event stream without gaps or repeats.
      lastEventId: events.length ? events[events.length - 1]!.id : 0,
    });
  });

  app.post('/api/runs/:id/retry', async (c) => {
    const id = runId(c.req.param('id'));
    const run = await transition(() => engine.retry(id));
    return c.json({ run: runView(run, forges) });
  });

  app.post('/api/runs/:id/cancel', async (c) => {
    const id = runId(c.req.param('id'));
    // The token's name goes into the run's record (API, dashboard), never into what the forge
    // shows: status comments say "cancelled by an operator" (see the outbox's public reasons).
    const run = await transition(() => engine.cancel(id, `cancelled by operator (token "${c.get('apiToken').name}")`));
    return c.json({ run: runView(run, forges) });
  });

  app.post('/api/queue/pause', async (c) => {
    await engine.pause();
    return c.json({ paused: true });
  });

  app.post('/api/queue/resume', async (c) => {
    await engine.resume();
    return c.json({ paused: false });
  });

  app.get('/api/queue/stats', async (c) => c.json(await queries.summary(now())));

  return app;
}

async function transition<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof TransitionError) {
      throw new HttpError(err.code === 'not_found' ? 404 : 409, err.code, err.message, { cause: err });
    }
    throw err;
  }
}

function runId(raw: string): number {
  if (!/^\d{1,15}$/.test(raw) || Number(raw) < 1)
    throw new HttpError(400, 'bad_request', `run id must be a positive whole number, got "${raw.slice(0, 40)}"`);
  return Number(raw);
}

/** Query parameters of `GET /api/runs`, each documented in docs/api.md ("List runs"). */
const LIST_PARAMETERS = ['status', 'stage', 'repo', 'number', 'issue', 'q', 'since', 'until', 'cursor', 'limit'];
/** A search is a few words; a longer one is a mistake, and every row scanned compares against it. */
const MAX_SEARCH_LENGTH = 200;

function parseFilter(query: Record<string, string>): RunFilter {
  const filter: RunFilter = { limit: 50 };
  for (const key of Object.keys(query)) {
    if (!LIST_PARAMETERS.includes(key))
      throw new HttpError(400, 'bad_request', `unknown query parameter "${key.slice(0, 40)}" (known: ${LIST_PARAMETERS.join(', ')})`);
  }
  if (query.status) {
    const statuses = query.status.split(',').map((s) => s.trim());
    const bad = statuses.find((s) => !STATUSES.includes(s));
    if (bad !== undefined)
      throw new HttpError(
        400,
        'bad_request',
        `status must be one or more of ${STATUSES.join(', ')} (comma-separated), got "${bad.slice(0, 40)}"`,
      );
    filter.status = statuses as RunStatus[];
  }
  if (query.stage) {
    if (!/^[\w.-]{1,100}$/.test(query.stage))
      throw new HttpError(400, 'bad_request', `stage must be a stage name (letters, digits, "-", "_"), got "${query.stage.slice(0, 40)}"`);
    filter.stage = query.stage;
  }
  if (query.repo) {
    // Split at the last `/`: a GitLab project's owner is its namespace, subgroups included (`acme/platform/app`).
    const match = /^(\S+)\/([^/\s]+)$/.exec(query.repo);
    if (!match) throw new HttpError(400, 'bad_request', `repo must look like owner/repo, got "${query.repo.slice(0, 80)}"`);
    filter.owner = match[1];
    filter.repo = match[2];
  }
  if (query.number !== undefined && query.issue !== undefined && query.number !== query.issue)
    throw new HttpError(400, 'bad_request', 'number and issue name the same thing: give one of them');
  const number = query.number ?? query.issue;
  if (number !== undefined) filter.number = positiveInt(query.number !== undefined ? 'number' : 'issue', number);
  if (query.q !== undefined) {
    const q = query.q.trim();
    if (q.length > MAX_SEARCH_LENGTH)
      throw new HttpError(400, 'bad_request', `q must be at most ${MAX_SEARCH_LENGTH} characters, got ${q.length}`);
    // `#12` or `12` is an issue (or pull request) number; anything else is text.
    const issue = /^#?(\d{1,9})$/.exec(q);
    if (issue) {
      if (filter.number !== undefined && filter.number !== Number(issue[1]))
        throw new HttpError(400, 'bad_request', `q names issue ${issue[1]} and number names ${filter.number}: give one of them`);
      filter.number = positiveInt('q', issue[1]!);
    } else if (q !== '') filter.text = q;
  }
  if (query.since !== undefined) filter.since = instant('since', query.since);
  if (query.until !== undefined) filter.until = instant('until', query.until);
  if (filter.since !== undefined && filter.until !== undefined && filter.since >= filter.until)
    throw new HttpError(400, 'bad_request', `since must be before until, got since=${query.since} and until=${query.until}`);
  if (query.cursor !== undefined) filter.beforeId = positiveInt('cursor', query.cursor);
  if (query.limit !== undefined) {
    filter.limit = positiveInt('limit', query.limit);
    if (filter.limit > 200) throw new HttpError(400, 'bad_request', `limit must be between 1 and 200, got "${query.limit}"`);
  }
  return filter;
}

/**
 * A moment: an ISO 8601 time with its zone (`2026-11-30T09:00:00Z`, `2026-11-30T10:00:00+01:00`),
 * a date (`2026-11-30`, midnight UTC), or epoch milliseconds. A time without a zone is refused:
 * the server's zone and the reader's may differ, and guessing shifts the range by hours.
 */
function instant(name: string, raw: string): number {
  const text = raw.trim();
  if (/^\d{1,15}$/.test(text)) return Number(text);
  const date = /^\d{4}-\d{2}-\d{2}$/.test(text);
  const withZone = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})$/.test(text);
  const ms = date || withZone ? Date.parse(date ? `${text}T00:00:00Z` : text) : NaN;
  if (!Number.isFinite(ms))
    throw new HttpError(
      400,
      'bad_request',
      `${name} must be a time with its zone (2026-11-30T09:00:00Z or 2026-11-30T10:00:00+01:00), a date (2026-11-30, UTC) ` +
        `or epoch milliseconds, got "${text.slice(0, 40)}"`,
    );
  return ms;
}

async function readObject(request: Request): Promise<Record<string, unknown>> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await request.text());
  } catch (err) {
    throw new HttpError(400, 'invalid_json', `invalid JSON: ${(err as Error).message.slice(0, 200)}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new HttpError(400, 'invalid_body', 'body must be a JSON object such as {"stage":"analyse","repository":"owner/repo"}');
  }
  return parsed as Record<string, unknown>;
}

/** The body of `POST /api/runs`, each field checked and named when wrong. */
function parseSubmission(body: Record<string, unknown>): RunSubmission {
  for (const key of Object.keys(body)) {
    if (!SUBMISSION_KEYS.includes(key))
      throw new HttpError(400, 'invalid_body', `unknown field "${key.slice(0, 40)}" (known: ${SUBMISSION_KEYS.join(', ')})`);
  }
  const { stage, repository, ref } = body;
  if (typeof stage !== 'string' || stage.trim() === '')
    throw new HttpError(400, 'invalid_body', 'stage is required: the name of a pipeline stage');
  if (typeof repository !== 'string')
    throw new HttpError(400, 'invalid_body', 'repository is required: owner/repo (github:owner/repo, gitlab:namespace/project)');
  const name = parseForgeRepository(repository);
  if ('problem' in name)
    throw new HttpError(400, 'invalid_body', `repository ${name.problem}, got ${JSON.stringify(repository.slice(0, 120))}`);
  const submission: RunSubmission = { stage: stage.trim(), ...name };
  if (body.number !== undefined && body.issue !== undefined && body.number !== body.issue)
    throw new HttpError(400, 'invalid_body', 'number and issue name the same thing: give one of them');
  const number = body.number ?? body.issue;
  if (number !== undefined && number !== null) {
    if (typeof number !== 'number' || !Number.isSafeInteger(number) || number < 1)
      throw new HttpError(
        400,
        'invalid_body',
        `number must be a positive whole number (the issue or pull request), got ${JSON.stringify(number)}`,
      );
    submission.number = number;
  }
  const args = body.arguments;
  if (args !== undefined && args !== null) {
    const text = Array.isArray(args) && args.every((a) => typeof a === 'string') ? args.join(' ') : args;
    if (typeof text !== 'string')
      throw new HttpError(400, 'invalid_body', 'arguments must be a string (or a list of strings, joined with spaces)');
    if (text.length > MAX_ARGUMENTS_LENGTH)
      throw new HttpError(400, 'invalid_body', `arguments must be at most ${MAX_ARGUMENTS_LENGTH} characters, got ${text.length}`);
    if (text.trim() !== '') submission.arguments = text;
  }
  if (ref !== undefined && ref !== null) {
    if (typeof ref !== 'string' || !isBranchName(ref))
      throw new HttpError(400, 'invalid_body', `ref ${BRANCH_NAME_RULE}, got ${JSON.stringify(String(ref).slice(0, 120))}`);
    submission.ref = ref;
  }
  return submission;
}

function positiveInt(name: string, raw: string): number {
  if (!/^\d{1,15}$/.test(raw) || Number(raw) < 1)
    throw new HttpError(400, 'bad_request', `${name} must be a positive whole number, got "${raw.slice(0, 40)}"`);
  return Number(raw);
}
