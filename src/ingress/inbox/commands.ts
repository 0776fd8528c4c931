import { accountKey } from '../../forge/index.js';
import { chatHelp, commandRequest, type ChatCommand, type ForgeEvent, type Pipeline } from '../../pipeline/index.js';
import {
  forgeRepository,
  runIsOf,
  TransitionError,
  type ForgeItem,
  type EnqueueResult,
  type IssueView,
  type Run,
  type RunQueries,
  type RunStatus,
  type TaskRequest,
} from '../../runs/index.js';
import type { NewOutboxEntry } from '../../outbox/index.js';
import type { TransactionScope } from '../../store/index.js';
import { PERMISSION_HELP_PAGE } from './permission-answer.js';

/** Outbox kinds the commands write (their handlers are registered by the composition root). */
export const COMMAND_OUTBOX_KIND = { comment: 'comment', reaction: 'reaction' } as const;

/** The reaction that says "taken" on a command's comment. */
export const TAKEN_REACTION = 'eyes';

/** Runs `retry` may start again, newest first; and runs `cancel` ends. */
const RETRYABLE: readonly RunStatus[] = ['failed', 'dead', 'timed_out', 'cancelled'];
const CANCELLABLE: readonly RunStatus[] = ['queued', 'held', 'provisioning', 'running', 'waiting'];

/** Longest reply; the forge takes more, but a status of a long-lived issue must stay readable. */
const MAX_REPLY = 12_000;

/**
 * Runs of the issue's number read to find its own: the same repository name on another forge (or
 * a GitLab merge request of the same number) has runs of that number too, left out after reading.
 */
const RUNS_READ = 100;

export interface CommandEngine {
  enqueueIn(scope: TransactionScope, request: TaskRequest): Promise<EnqueueResult>;
  retryIn(scope: TransactionScope, runId: number): Promise<Run>;
  cancelIn(scope: TransactionScope, runId: number, reason?: string): Promise<Run>;
  resumeIn(scope: TransactionScope, runId: number, reply: { text: string; by: string }): Promise<Run>;
}

export interface CommandDeps {
  engine: CommandEngine;
  /** What a command reads before its transaction: the issue's runs, its SDLC view for `status`. */
  runs: Pick<RunQueries, 'list' | 'issue'>;
  outbox: { enqueue(scope: TransactionScope, entry: NewOutboxEntry): Promise<number | null> };
  /**
   * The bot account that reacts and replies, by name (`dev`): on GitHub and GitLab that forge's
   * account of the name (`github:dev`), so a command is answered on the forge it came from.
   * @default 'dev'
   */
  account?: string;
  now: () => number;
}

/** What a command came to: the runs it touched, and what the reply says. */
export interface CommandResult {
  runIds: number[];
  stages: string[];
  reply: string;
}

type Issue = { owner: string; repo: string; number: number };

/** The issue or merge request the command is on, as runs name it (commands read only its runs). */
function itemOf(event: ForgeEvent & { number: number }): ForgeItem {
  return { number: event.number, forge: event.forge, ...(event.forge === 'gitlab' && event.isPull ? { mergeRequest: true } : {}) };
}

/** The issue's runs in these states, newest first: this forge's and this item's only. */
async function runsOf(deps: CommandDeps, event: ForgeEvent & { number: number }, status: RunStatus[]): Promise<Run[]> {
  const item = itemOf(event);
  const runs = await deps.runs.list({ owner: event.owner, repo: event.repo, number: event.number, status, limit: RUNS_READ });
  return runs.filter((run) => runIsOf(run, item));
}

/**
 * Where the command's reaction and reply go: the forge's account, the comment's ordering (the
 * status comments' own, so a reply never overtakes them), and on GitLab the merge request a note
 * on one lives on (its numbers are not the issues').
 */
function answerTo(deps: CommandDeps, event: ForgeEvent & { number: number }) {
  const onMergeRequest = event.forge === 'gitlab' && event.isPull;
  return {
    account: accountKey(event.forge, deps.account ?? 'dev'),
    ordering: `comment:${forgeRepository(event.forge, event.owner, event.repo)}${onMergeRequest ? '!' : '#'}${event.number}`,
    // Comment ids are the forge's, unique on it: GitHub's and GitLab's name their forge, Gitea's keep their key.
    comment: (id: number | string) =>
      `${event.forge === 'github' || event.forge === 'gitlab' ? `${event.forge}:` : ''}${event.owner}/${event.repo}:${id}`.toLowerCase(),
    ...(onMergeRequest ? { kind: 'pull' as const } : {}),
  };
}

/**
 * What a command needs to read, read before its transaction: on SQLite the store has one
 * connection, and a read outside the open transaction would wait for it to end. The writes
 * check again under the transaction (a run that ended meanwhile is a conflict, answered).
 */
export interface CommandContext {
  retryable?: Run;
  live: Run[];
  view: IssueView | null;
}

export async function readCommandContext(
  deps: CommandDeps,
  event: ForgeEvent & { number: number },
  command: ChatCommand,
): Promise<CommandContext> {
  const issue: Issue = { owner: event.owner, repo: event.repo, number: event.number };
  switch (command.name) {
    case 'retry':
      return { retryable: (await runsOf(deps, event, [...RETRYABLE]))[0], live: [], view: null };
    case 'cancel':
      return { live: await runsOf(deps, event, [...CANCELLABLE]), view: null };
    case 'status':
      return { live: [], view: await deps.runs.issue({ ...issue, ...itemOf(event) }, deps.now()) };
    default:
      return { live: [], view: null };
  }
}

/**
 * Carries a command out inside the delivery's verdict transaction and queues the reaction and the
 * reply in the same transaction. The reaction's dedup key is the comment's: a second delivery of
 * the same comment (a redelivery, or catch-up finding it after downtime) finds it taken and does
 * nothing. Returns null then.
 */
export async function runCommand(
  deps: CommandDeps,
  scope: TransactionScope,
  event: ForgeEvent & { number: number },
  command: ChatCommand,
  context: CommandContext,
  pipeline: Pipeline,
  fallbackId: string,
): Promise<CommandResult | null> {
  const issue: Issue = { owner: event.owner, repo: event.repo, number: event.number };
  const to = answerTo(deps, event);
  const commentKey = to.comment(event.comment?.id ?? fallbackId);
  const { account, ordering } = to;
  const where = { owner: issue.owner, repo: issue.repo, number: issue.number, ...(to.kind ? { kind: to.kind } : {}) };
  if (event.comment?.id !== undefined) {
    const taken = await deps.outbox.enqueue(scope, {
      kind: COMMAND_OUTBOX_KIND.reaction,
      // The item's number and kind too: GitLab reaches a note's award emoji through its issue or merge request.
      payload: { account, ...where, commentId: event.comment.id, content: TAKEN_REACTION },
      orderingKey: ordering,
      dedupKey: `command:${commentKey}:taken`,
    });
    if (taken === null) return null;
  }
  const result = await carryOut(deps, scope, event, issue, command, context, pipeline);
  const reply = await deps.outbox.enqueue(scope, {
    kind: COMMAND_OUTBOX_KIND.comment,
    payload: { account, ...where, body: clip(result.reply) },
    orderingKey: ordering,
    dedupKey: `command:${commentKey}:reply`,
  });
  return reply === null && event.comment?.id === undefined ? null : result;
}

/** The reply to someone without write access: nothing runs. Queued once per comment. */
export async function refuseCommand(deps: CommandDeps, scope: TransactionScope, event: ForgeEvent & { number: number }): Promise<void> {
  const to = answerTo(deps, event);
  await deps.outbox.enqueue(scope, {
    kind: COMMAND_OUTBOX_KIND.comment,
    payload: {
      account: to.account,
      owner: event.owner,
      repo: event.repo,
      number: event.number,
      ...(to.kind ? { kind: to.kind } : {}),
      body: `@${event.sender} only people with write access to ${event.owner}/${event.repo} can give baton commands; nothing was run. See baton's ${PERMISSION_HELP_PAGE}.`,
    },
    orderingKey: to.ordering,
    dedupKey: `command:${to.comment(event.comment?.id ?? 'none')}:refused`,
  });
}

async function carryOut(
  deps: CommandDeps,
  scope: TransactionScope,
  event: ForgeEvent,
  issue: Issue,
  command: ChatCommand,
  context: CommandContext,
  pipeline: Pipeline,
): Promise<CommandResult> {
  const none = (reply: string): CommandResult => ({ runIds: [], stages: [], reply });
  switch (command.name) {
    case 'help':
      return none(chatHelp(pipeline));
    case 'unknown':
      return none(`I don't know the command \`${command.word.replace(/`/g, '')}\`.\n\n${chatHelp(pipeline)}`);
    case 'status':
      return none(statusReply(context.view, issue, event.forge === 'gitlab' && event.isPull ? '!' : '#'));
    case 'retry': {
      const run = context.retryable;
      if (!run) return none('Nothing to retry: this issue has no failed, dead, timed-out or cancelled run.');
      try {
        const queued = await deps.engine.retryIn(scope, run.id);
        return {
          runIds: [queued.id],
          stages: [queued.stage],
          reply: `Retrying run ${run.id} (\`${run.stage}\`, was ${run.status}): queued again.`,
        };
      } catch (err) {
        if (isConflict(err)) return none(`Run ${run.id} (\`${run.stage}\`) cannot be retried now: ${messageOf(err)}.`);
        throw err;
      }
    }
    case 'cancel': {
      const live = context.live;
      if (live.length === 0) return none('Nothing to cancel: this issue has no queued, running or waiting run.');
      const done: Run[] = [];
      for (const run of live) {
        try {
          done.push(await deps.engine.cancelIn(scope, run.id, `cancelled by ${event.sender} (command)`));
        } catch (err) {
          if (!isConflict(err)) throw err;
        }
      }
      if (done.length === 0) return none('Nothing to cancel: the issue’s runs ended meanwhile.');
      return {
        runIds: done.map((r) => r.id),
        stages: done.map((r) => r.stage),
        reply: `Cancelled ${done.map((r) => `run ${r.id} (\`${r.stage}\`)`).join(', ')}.`,
      };
    }
    case 'run': {
      const request = commandRequest(event, pipeline, command);
      if ('unknownStage' in request) {
        return none(
          `There is no stage \`${command.stage.replace(/`/g, '')}\`. Stages: ${request.unknownStage.map((s) => `\`${s}\``).join(', ')}.`,
        );
      }
      const payload = { ...request.payload, forge: event.forge };
      const result = await deps.engine.enqueueIn(scope, { ...request, payload });
      const id = result.run.id;
      const said: Record<EnqueueResult['outcome'], string> = {
        queued: `Started \`${request.stage}\`: run ${id} is queued.`,
        coalesced: `\`${request.stage}\` was already queued (run ${id}).`,
        followup: `\`${request.stage}\` is already running (run ${id}); it runs once more after it.`,
        dropped: `\`${request.stage}\` is already running (run ${id}); nothing more was started.`,
      };
      return { runIds: [id], stages: [request.stage], reply: said[result.outcome] };
    }
  }
}

/** `sign` is how the forge writes the item's number: `#7`, or `!7` for a GitLab merge request. */
function statusReply(view: IssueView | null, issue: Issue, sign: '#' | '!'): string {
  if (!view || view.runs.length === 0) return `No runs yet for ${issue.owner}/${issue.repo}${sign}${issue.number}.`;
  const lines = [
    `Status of ${sign}${issue.number}: ${view.totals.runs} run(s), ${duration(view.totals.durationMs)} running, ${usd(view.totals.costUsd)}.`,
    '',
    '| run | stage | status | duration | cost |',
    '| --- | --- | --- | --- | --- |',
  ];
  for (const run of view.runs.slice(-30)) {
    const where = run.pullRequest ? ` (PR #${run.number})` : '';
    lines.push(
      `| ${run.id} | \`${run.stage}\`${where} | ${run.status} | ${run.durationMs === null ? '—' : duration(run.durationMs)} | ${run.costUsd === null ? '—' : usd(run.costUsd)} |`,
    );
  }
  return lines.join('\n');
}

function duration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  return m < 60 ? `${m}m ${s % 60}s` : `${Math.floor(m / 60)}h ${m % 60}m`;
}

function usd(value: number): string {
  return `$${value.toFixed(2)}`;
}

function clip(text: string): string {
  return text.length > MAX_REPLY ? `${text.slice(0, MAX_REPLY)}\n\n… (truncated)` : text;
}

function isConflict(err: unknown): boolean {
  return err instanceof TransitionError && err.code === 'conflict';
}

function messageOf(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).slice(0, 300);
}

/** The issue's run that waits for a reply to its question, if any (read before the transaction). */
export async function waitingRunOf(deps: CommandDeps, event: ForgeEvent & { number: number }): Promise<Run | undefined> {
  return (await runsOf(deps, event, ['waiting']))[0];
}
