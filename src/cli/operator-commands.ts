import { BACKOFF, backoffDelay } from '../background/index.js';
import { createApiClient, type ApiClient } from './api-client.js';
import { parseCommand, subcommandOf, UsageError, type CommandGroup, type CommandSpec } from './args.js';
import { formatDuration, formatTime, table } from './format.js';
import { type CommandIo, visibleIo } from './io.js';
import type { RunConversationView } from '../http/index.js';
import { formatConversation } from './transcript-print.js';

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
  /** Why a held run waits (servers before budgets do not send it). */
  heldReason?: string | null;
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

const FINAL = ['succeeded', 'failed', 'timed_out', 'cancelled', 'dead', 'expired'];

const target = (r: RunView) => `${r.owner}/${r.repo}${r.number === null ? '' : `#${r.number}`}`;
const elapsed = (r: RunView) => formatDuration((r.finishedAt ?? Date.now()) - (r.startedAt ?? r.claimedAt ?? r.createdAt));
const cost = (usd: number | null) => (usd === null ? '-' : `$${usd.toFixed(4)}`);

function runId(raw: string | undefined, spec: CommandSpec): string {
  if (!raw || !/^\d+$/.test(raw)) {
    throw new UsageError(`${spec.command}: needs a run id (a whole number)${raw ? `, got "${raw}"` : ''}`, spec);
  }
  return raw;
}

const JSON_OPTION = { json: { type: 'boolean', description: 'print JSON for scripts' } } as const;
const RUN_ID = ['RUN'] as const;

const RUNS_LS = {
  command: 'baton runs ls',
  summary: 'Lists runs, newest first (BATON_URL, BATON_TOKEN).',
  options: {
    status: { type: 'string', value: 'STATUS', description: 'only runs in this status (queued, running, failed, …)' },
    stage: { type: 'string', value: 'STAGE', description: 'only runs of this stage' },
    repo: { type: 'string', value: 'OWNER/REPO', description: 'only runs of this repository' },
    number: { type: 'string', value: 'N', description: 'only runs of this issue or pull request number' },
    limit: { type: 'string', value: 'N', description: 'at most N runs per page' },
    cursor: { type: 'string', value: 'CURSOR', description: 'the next page, as printed after the previous one' },
    ...JSON_OPTION,
  },
} as const satisfies CommandSpec;
const RUNS_SHOW = {
  command: 'baton runs show',
  positionals: RUN_ID,
  summary: 'Shows one run with its timeline and log.',
  options: JSON_OPTION,
} as const satisfies CommandSpec;
const RUNS_RETRY = {
  command: 'baton runs retry',
  positionals: RUN_ID,
  summary: 'Queues a failed, dead, timed-out or cancelled run again.',
  options: JSON_OPTION,
} as const satisfies CommandSpec;
const RUNS_CANCEL = {
  command: 'baton runs cancel',
  positionals: RUN_ID,
  summary: 'Cancels a live run.',
  options: JSON_OPTION,
} as const satisfies CommandSpec;

export const RUNS_COMMANDS: CommandGroup = {
  command: 'baton runs',
  summary: 'Runs, over the API of a running baton (BATON_URL, BATON_TOKEN).',
  subcommands: [{ ...RUNS_LS, aliases: ['list'] }, RUNS_SHOW, RUNS_RETRY, RUNS_CANCEL],
};

/** `baton runs ls|show|retry|cancel`. */
export async function runsCommand(argv: string[], rawIo: CommandIo): Promise<number> {
  // Forge and agent text is printed below: it must not drive the terminal.
  const io = visibleIo(rawIo);
  const [spec, rest] = subcommandOf(RUNS_COMMANDS, argv);
  switch (spec.command) {
    case RUNS_LS.command: {
      const { values } = parseCommand(RUNS_LS, rest);
      const query = new URLSearchParams();
      for (const key of ['status', 'stage', 'repo', 'number', 'limit', 'cursor'] as const) {
        const value = values[key];
        if (value !== undefined) query.set(key, value);
      }
      const page = await createApiClient(io).get<{ runs: RunView[]; nextCursor: string | null }>(
        `/api/runs${query.size ? `?${query}` : ''}`,
      );
      if (values.json) {
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
    case RUNS_SHOW.command: {
      const { positionals, values } = parseCommand(RUNS_SHOW, rest);
      const id = runId(positionals[0], RUNS_SHOW);
      const detail = await createApiClient(io).get<{ run: RunView; timeline: TimelineEvent[]; log: string }>(`/api/runs/${id}`);
      if (values.json) {
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
            ...(r.heldReason ? [['held', r.heldReason] as [string, string]] : []),
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
    default: {
      const action = spec === RUNS_RETRY ? 'retry' : 'cancel';
      const { positionals, values } = parseCommand(spec, rest);
      const id = runId(positionals[0], spec);
      const { run } = await createApiClient(io).post<{ run: RunView }>(`/api/runs/${id}/${action}`);
      io.out(values.json ? JSON.stringify({ run }, null, 2) : `run #${run.id} is now ${run.status}`);
      return 0;
    }
  }
}

function detailOf(e: TimelineEvent): string {
  const d = e.data ?? {};
  const text = d.error ?? d.reason ?? d.workspace ?? '';
  return typeof text === 'string' ? text : JSON.stringify(text);
}

const QUEUE_PAUSE = {
  command: 'baton queue pause',
  summary: 'Stops dispatching: queued runs wait; running ones continue.',
  options: JSON_OPTION,
} as const satisfies CommandSpec;
const QUEUE_RESUME = {
  command: 'baton queue resume',
  summary: 'Starts dispatching again.',
  options: JSON_OPTION,
} as const satisfies CommandSpec;
const QUEUE_STATS = {
  command: 'baton queue stats',
  summary: 'Prints queue statistics: runs per status and stage, today’s usage.',
  options: JSON_OPTION,
} as const satisfies CommandSpec;

export const QUEUE_COMMANDS: CommandGroup = {
  command: 'baton queue',
  summary: 'The dispatch queue, over the API of a running baton (BATON_URL, BATON_TOKEN).',
  subcommands: [QUEUE_PAUSE, QUEUE_RESUME, QUEUE_STATS],
};

/** `baton queue pause|resume|stats`. */
export async function queueCommand(argv: string[], rawIo: CommandIo): Promise<number> {
  // Forge and agent text is printed below: it must not drive the terminal.
  const io = visibleIo(rawIo);
  const [spec, rest] = subcommandOf(QUEUE_COMMANDS, argv);
  const { values } = parseCommand(spec, rest);
  const api = createApiClient(io);
  if (spec !== QUEUE_STATS) {
    const result = await api.post<{ paused: boolean }>(`/api/queue/${spec === QUEUE_PAUSE ? 'pause' : 'resume'}`);
    io.out(
      values.json
        ? JSON.stringify(result)
        : result.paused
          ? 'dispatch paused: queued runs wait; running ones continue'
          : 'dispatch resumed',
    );
    return 0;
  }
  const stats = await api.get<{
    queued: number;
    held?: number;
    provisioning: number;
    running: number;
    dead: number;
    failed: number;
    paused: boolean;
    concurrency: number;
    stages: Record<string, { queued: number; provisioning: number; running: number; dead: number; failed: number }>;
    today: { tokens: number; costUsd: number; finished: number; succeeded: number };
  }>('/api/queue/stats');
  if (values.json) {
    io.out(JSON.stringify(stats, null, 2));
    return 0;
  }
  io.out(
    `queued ${stats.queued}${stats.held ? ` · held ${stats.held} (daily budget spent)` : ''} · running ${stats.provisioning + stats.running} of ${stats.concurrency} · dead ${stats.dead} · failed ${stats.failed}${stats.paused ? ' · PAUSED' : ''}`,
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

export const LOGS_COMMAND = {
  command: 'baton logs',
  positionals: RUN_ID,
  summary: 'Prints a run’s log, or its conversation with the agent (BATON_URL, BATON_TOKEN).',
  options: {
    follow: { type: 'boolean', short: 'f', description: 'keep printing new lines until the run ends' },
    transcript: {
      type: 'boolean',
      short: 't',
      description: 'print the conversation instead: prompts, replies, assistant messages, tool calls, questions, cost per turn',
    },
    full: { type: 'boolean', description: 'with --transcript: long prompts, messages and tool results whole' },
  },
} as const satisfies CommandSpec;

/**
 * `baton logs <run> [--follow]`: prints the run's log; with --follow keeps printing new lines
 * from the event stream until the run ends, reconnecting from the last event id after a drop.
 * `--transcript` prints the run's conversation (`GET /api/runs/:id/conversation`) instead.
 */
export async function logsCommand(argv: string[], rawIo: CommandIo): Promise<number> {
  // Forge and agent text is printed below: it must not drive the terminal.
  const io = visibleIo(rawIo);
  const { positionals, values } = parseCommand(LOGS_COMMAND, argv);
  const id = runId(positionals[0], LOGS_COMMAND);
  const api = createApiClient(io);
  if (values.transcript) {
    if (values.follow) throw new UsageError('--transcript and --follow do not go together: a turn is kept once it ends', LOGS_COMMAND);
    io.out(formatConversation(await api.get<RunConversationView>(`/api/runs/${id}/conversation`), { full: values.full ?? false }));
    return 0;
  }
  const detail = await api.get<{ run: RunView; log: string; lastEventId: number }>(`/api/runs/${id}`);
  if (detail.log) io.out(detail.log);
  if (!values.follow || FINAL.includes(detail.run.status)) {
    if (values.follow) io.err(`run #${id} ${detail.run.status}`);
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
