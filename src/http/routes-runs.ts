import { Hono } from 'hono';
import {
  ALL_STATUSES,
  RUN_EVENT,
  TransitionError,
  type RunEngine,
  type RunFilter,
  type RunQueries,
  type RunStatus,
} from '../runs/index.js';
import type { AuthEnv } from './auth.js';
import { HttpError } from './errors.js';
import { logLines, runView } from './run-view.js';

export interface RunsRoutesOptions {
  /** Operator actions: retry, cancel, pause, resume. */
  engine: Pick<RunEngine, 'retry' | 'cancel' | 'pause' | 'resume'>;
  runs: RunQueries;
  forgeUrl?: string;
  now: () => number;
}

const STATUSES: readonly string[] = ALL_STATUSES;

/**
 * The runs API under /api (auth is applied by the app before these run). Documented in the
 * README's "Runs API" section; keep the two in step.
 */
export function runsRoutes(options: RunsRoutesOptions): Hono<AuthEnv> {
  const { engine, runs: queries, forgeUrl, now } = options;
  const app = new Hono<AuthEnv>();

  app.get('/api/runs', async (c) => {
    const filter = parseFilter(c.req.query());
    const limit = filter.limit!;
    const runs = await queries.list({ ...filter, limit: limit + 1 });
    const page = runs.slice(0, limit);
    return c.json({
      runs: page.map((r) => runView(r, forgeUrl)),
      nextCursor: runs.length > limit ? String(page[page.length - 1]!.id) : null,
    });
  });

  app.get('/api/runs/:id', async (c) => {
    const id = runId(c.req.param('id'));
    const run = await queries.get(id);
    if (!run) throw new HttpError(404, 'not_found', `run ${id} does not exist`);
    const events = await queries.events(id);
    return c.json({
      run: runView(run, forgeUrl),
      timeline: events.filter((e) => e.type !== RUN_EVENT.progress),
      log: logLines(events).join('\n'),
      // Where a follower (`baton logs --follow`) resumes the event stream without gaps or repeats.
      lastEventId: events.length ? events[events.length - 1]!.id : 0,
    });
  });

  app.post('/api/runs/:id/retry', async (c) => {
    const id = runId(c.req.param('id'));
    const run = await transition(() => engine.retry(id));
    return c.json({ run: runView(run, forgeUrl) });
  });

  app.post('/api/runs/:id/cancel', async (c) => {
    const id = runId(c.req.param('id'));
    const run = await transition(() => engine.cancel(id, `cancelled by operator (token "${c.get('apiToken').name}")`));
    return c.json({ run: runView(run, forgeUrl) });
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

function parseFilter(query: Record<string, string>): RunFilter {
  const filter: RunFilter = { limit: 50 };
  const known = ['status', 'stage', 'repo', 'number', 'issue', 'cursor', 'limit'];
  for (const key of Object.keys(query)) {
    if (!known.includes(key))
      throw new HttpError(400, 'bad_request', `unknown query parameter "${key.slice(0, 40)}" (known: ${known.join(', ')})`);
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
  if (query.stage) filter.stage = query.stage;
  if (query.repo) {
    const match = /^([^/\s]+)\/([^/\s]+)$/.exec(query.repo);
    if (!match) throw new HttpError(400, 'bad_request', `repo must look like owner/repo, got "${query.repo.slice(0, 80)}"`);
    filter.owner = match[1];
    filter.repo = match[2];
  }
  const number = query.number ?? query.issue;
  if (number !== undefined) filter.number = positiveInt('number', number);
  if (query.cursor !== undefined) filter.beforeId = positiveInt('cursor', query.cursor);
  if (query.limit !== undefined) {
    filter.limit = positiveInt('limit', query.limit);
    if (filter.limit > 200) throw new HttpError(400, 'bad_request', `limit must be between 1 and 200, got "${query.limit}"`);
  }
  return filter;
}

function positiveInt(name: string, raw: string): number {
  if (!/^\d{1,15}$/.test(raw) || Number(raw) < 1)
    throw new HttpError(400, 'bad_request', `${name} must be a positive whole number, got "${raw.slice(0, 40)}"`);
  return Number(raw);
}
