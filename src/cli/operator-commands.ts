import { BACKOFF, backoffDelay } from '../background/index.js';
import { createApiClient, type ApiClient } from './api-client.js';
import { formatDuration, formatTime, parseArgs, table, UsageError } from './args.js';
import type { CommandIo } from './io.js';

/** The parts of the API's run view the commands print. */
interface RunView {
  id: number;
  key: string;
  stage: string;
  owner: string;
  repo: string;
  number: number | null;
  status: string;
  attempts: number;
  maxAttempts: number;
  workspaceName: string | null;
  lastError: string | null;
  summary: string | null;
  tokens: number | null;
  costUsd: number | null;
  createdAt: number;
  startedAt: number | null;
  claimedAt: number | null;
  finishedAt: number | null;
  issueUrl: string | null;
}

interface TimelineEvent {
  id: number;
  type: string;
  toStatus: string | null;
  data: Record<string, unknown> | null;
  createdAt: number;
}

const FINAL = ['succeeded', 'failed', 'timed_out', 'cancelled', 'dead'];

const target = (r: RunView) => `${r.owner}/${r.repo}${r.number === null ? '' : `#${r.number}`}`;
const elapsed = (r: RunView) => formatDuration((r.finishedAt ?? Date.now()) - (r.startedAt ?? r.claimedAt ?? r.createdAt));
const cost = (usd: number | null) => (usd === null ? '-' : `$${usd.toFixed(4)}`);

function runId(raw: string | undefined, usage: string): string {
  if (!raw || !/^\d+$/.test(raw)) throw new UsageError(`${usage}: needs a run id (a whole number)${raw ? `, got "${raw}"` : ''}`);
  return raw;
}

/** `baton runs ls|show|retry|cancel`. */
export async function runsCommand(argv: string[], io: CommandIo): Promise<number> {
  const [sub, ...rest] = argv;
  const api = createApiClient(io);
  switch (sub) {
    case 'ls':
    case 'list': {
      const { flags } = parseArgs(rest, { values: ['status', 'stage', 'repo', 'number', 'limit', 'cursor'], booleans: ['json'] });
      const query = new URLSearchParams();
      for (const key of ['status', 'stage', 'repo', 'number', 'limit', 'cursor'])
        if (typeof flags[key] === 'string') query.set(key, flags[key]);
      const page = await api.get<{ runs: RunView[]; nextCursor: string | null }>(`/api/runs${query.size ? `?${query}` : ''}`);
      if (flags.json) {
        io.out(JSON.stringify(page, null, 2));
        return 0;
      }
      if (page.runs.length === 0) {
        io.out('no runs');
        return 0;
      }
      io.out(
        table(
          ['ID', 'STATUS', 'STAGE', 'TARGET', 'WORKSPACE', 'ELAPSED', 'TOKENS', 'COST', 'CREATED'],
          page.runs.map((r) => [
            r.id,
            r.status,
            r.stage,
            target(r),
            r.workspaceName,
            elapsed(r),
            r.tokens,
            cost(r.costUsd),
            formatTime(r.createdAt),
          ]),
        ),
      );
      if (page.nextCursor) io.out(`\nmore: baton runs ls --cursor ${page.nextCursor}`);
      return 0;
    }
    case 'show': {
      const { positional, flags } = parseArgs(rest, { booleans: ['json'] });
      const id = runId(positional[0], 'baton runs show');
      const detail = await api.get<{ run: RunView; timeline: TimelineEvent[]; log: string }>(`/api/runs/${id}`);
      if (flags.json) {
        io.out(JSON.stringify(detail, null, 2));
        return 0;
      }
      const r = detail.run;
      io.out(
        table(
          ['FIELD', 'VALUE'],
          [
            ['run', `#${r.id} ${r.stage} ${target(r)}`],
            ['status', r.status],
            ['attempts', `${r.attempts} of ${r.maxAttempts}`],
            ['workspace', r.workspaceName],
            ['elapsed', elapsed(r)],
            ['tokens', r.tokens],
            ['cost', cost(r.costUsd)],
            ['summary', r.summary],
            ['error', r.lastError],
            ['issue', r.issueUrl],
          ],
        ),
      );
      io.out('\nTIMELINE');
      io.out(
        table(
          ['TIME', 'EVENT', 'STATUS', 'DETAIL'],
          detail.timeline.map((e) => [formatTime(e.createdAt), e.type, e.toStatus, detailOf(e)]),
        ),
      );
      if (detail.log) io.out(`\nLOG\n${detail.log}`);
      return 0;
    }
    case 'retry':
    case 'cancel': {
      const { positional, flags } = parseArgs(rest, { booleans: ['json'] });
      const id = runId(positional[0], `baton runs ${sub}`);
      const { run } = await api.post<{ run: RunView }>(`/api/runs/${id}/${sub}`);
      io.out(flags.json ? JSON.stringify({ run }, null, 2) : `run #${run.id} is now ${run.status}`);
      return 0;
    }
    default:
      throw new UsageError(`usage: baton runs ls|show|retry|cancel${sub ? ` (unknown "${sub}")` : ''}`);
  }
}

function detailOf(e: TimelineEvent): string {
  const d = e.data ?? {};
  const text = d.error ?? d.reason ?? d.workspace ?? '';
  return typeof text === 'string' ? text : JSON.stringify(text);
}

/** `baton queue pause|resume|stats`. */
export async function queueCommand(argv: string[], io: CommandIo): Promise<number> {
  const [sub, ...rest] = argv;
  const { flags } = parseArgs(rest, { booleans: ['json'] });
  const api = createApiClient(io);
  if (sub === 'pause' || sub === 'resume') {
    const result = await api.post<{ paused: boolean }>(`/api/queue/${sub}`);
    io.out(
      flags.json ? JSON.stringify(result) : result.paused ? 'dispatch paused: queued runs wait; running ones continue' : 'dispatch resumed',
    );
    return 0;
  }
  if (sub === 'stats') {
    const stats = await api.get<{
      queued: number;
      provisioning: number;
      running: number;
      dead: number;
      failed: number;
      paused: boolean;
      concurrency: number;
      stages: Record<string, { queued: number; provisioning: number; running: number; dead: number; failed: number }>;
      today: { tokens: number; costUsd: number; finished: number; succeeded: number };
    }>('/api/queue/stats');
    if (flags.json) {
      io.out(JSON.stringify(stats, null, 2));
      return 0;
    }
    io.out(
      `queued ${stats.queued} · running ${stats.provisioning + stats.running} of ${stats.concurrency} · dead ${stats.dead} · failed ${stats.failed}${stats.paused ? ' · PAUSED' : ''}`,
    );
    io.out(
      `today: ${stats.today.finished} finished (${stats.today.succeeded} succeeded), ${stats.today.tokens} tokens, ${cost(stats.today.costUsd)}`,
    );
    const stages = Object.entries(stats.stages);
    if (stages.length) {
      io.out('');
      io.out(
        table(
          ['STAGE', 'QUEUED', 'PROVISIONING', 'RUNNING', 'DEAD', 'FAILED'],
          stages.map(([name, s]) => [name, s.queued, s.provisioning, s.running, s.dead, s.failed]),
        ),
      );
    }
    return 0;
  }
  throw new UsageError(`usage: baton queue pause|resume|stats${sub ? ` (unknown "${sub}")` : ''}`);
}

/**
 * `baton logs <run> [--follow]`: prints the run's log; with --follow keeps printing new lines
 * from the event stream until the run ends, reconnecting from the last event id after a drop.
 */
export async function logsCommand(argv: string[], io: CommandIo): Promise<number> {
  const { positional, flags } = parseArgs(argv, { booleans: ['follow'], short: { '-f': 'follow' } });
  const id = runId(positional[0], 'baton logs');
  const api = createApiClient(io);
  const detail = await api.get<{ run: RunView; log: string; lastEventId: number }>(`/api/runs/${id}`);
  if (detail.log) io.out(detail.log);
  if (!flags.follow || FINAL.includes(detail.run.status)) {
    if (flags.follow) io.err(`run #${id} ${detail.run.status}`);
    return 0;
  }
  return follow(api, io, Number(id), detail.lastEventId);
}

async function follow(api: ApiClient, io: CommandIo, runId: number, startAfter: number): Promise<number> {
  let lastId = startAfter;
  for (let attempt = 0; !io.signal?.aborted; attempt++) {
    try {
      const response = await api.stream(`/api/events?run=${runId}`, { 'last-event-id': String(lastId) }, io.signal);
      for await (const message of sseMessages(response.body!)) {
        attempt = 0;
        if (message.id !== undefined) lastId = Number(message.id);
        const event = JSON.parse(message.data) as TimelineEvent & { runId: number };
        if (event.type === 'run:progress') {
          const lines = event.data?.lines;
          if (Array.isArray(lines)) for (const line of lines) io.out(String(line));
        } else if (event.toStatus) {
          io.err(`run #${runId} ${event.toStatus}${detailOf(event) ? `: ${detailOf(event)}` : ''}`);
          if (FINAL.includes(event.toStatus)) return 0;
        }
      }
    } catch (err) {
      if (io.signal?.aborted) break;
      if ((err as { status?: number }).status && (err as { status: number }).status < 500) throw err;
    }
    // The stream ended or failed: reconnect after a short pause, resuming after lastId.
    await new Promise((resolve) => setTimeout(resolve, backoffDelay(BACKOFF.follow, attempt + 1)));
  }
  return 0;
}

/** Parses a text/event-stream body into messages (comments and retry fields are skipped). */
export async function* sseMessages(body: ReadableStream<Uint8Array>): AsyncGenerator<{ id?: string; data: string }> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buffer.indexOf('\n\n')) !== -1) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let id: string | undefined;
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('id:')) id = line.slice(3).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
      }
      if (data.length) yield { id, data: data.join('\n') };
    }
  }
}
