import { failureSentence } from '../outbox/index.js';
import { FAILURE_KIND } from '../runner-contract/index.js';
import { OUTCOME_MISSING, RUN_EVENT, RUN_STATUS, runIsOf, totalTokens, type Run, type RunEvent, type Usage } from '../runs/index.js';
import { forgeItemUrl, type ForgeWebRoots } from './forge-links.js';

/** Why a run did not succeed, in words first: what the list and the run page show. */
export interface RunFailure {
  /** What a person reads: the runner's own words (its summary) for a machine-readable kind, else the error as recorded. */
  message: string;
  /** The machine-readable kind (`agent_error`, `clone_failed`, `workspace_lost`, …); null when the error is words already. */
  code: string | null;
  /** The troubleshooting page section for a failure people fix themselves (a login, the agent command); null for others. */
  help: string | null;
}

/** A run as the API and the event stream show it: the run, plus derived fields people look for. */
export interface RunView extends Run {
  /** Input + output tokens (cache reads and writes are in `usage`). */
  tokens: number | null;
  /**
   * Link to the issue or pull request on the run's forge (Gitea and GitHub redirect issue links
   * of PRs; a GitLab merge request has its own); null when that forge is not configured, and for
   * repositories declared in baton.yaml, which are not on a forge.
   */
  issueUrl: string | null;
  /** Why it did not succeed (`lastError` made readable); null for a run that succeeded or has no error. */
  failure: RunFailure | null;
}

/** A run's error longer than this is cut in the view (the record keeps it whole). */
const MAX_FAILURE_CHARS = 4_000;

export function runView(run: Run, forges: ForgeWebRoots): RunView {
  const { number } = run;
  return {
    ...run,
    tokens: totalTokens(run.usage),
    issueUrl:
      number !== null && run.payload.declared !== true
        ? forgeItemUrl(forges, { ...run, number, pull: runIsOf(run, { number, forge: 'gitlab', mergeRequest: true }) })
        : null,
    failure: runFailure(run),
  };
}

/**
 * A runner reports a kind (`agent_error`) and, in its summary, the words (`Not logged in · Please
 * run /login`); baton records the kind as `lastError`. People need the words, then the kind.
 */
export function runFailure(run: Pick<Run, 'status' | 'lastError' | 'summary'>): RunFailure | null {
  const error = run.lastError?.trim();
  if (run.status === RUN_STATUS.succeeded || !error) return null;
  if (error.startsWith(OUTCOME_MISSING.trim()))
    return { message: cut(error.slice(OUTCOME_MISSING.length).trim() || error), code: OUTCOME_MISSING.replace(/[: ]+$/, ''), help: null };
  const sentence = failureSentence(error);
  const isCode = sentence !== undefined || /^[a-z][a-z0-9]*(_[a-z0-9]+)+$/.test(error);
  if (!isCode) return { message: cut(error), code: null, help: null };
  const words = run.summary?.trim();
  return { message: cut(words || sentence || error), code: error, help: failureHelp(error, words) };
}

/**
 * Where a person reads how to fix a failure of their setup: the agent's login (its API refused the
 * credentials, or Claude Code's own words for no login) and an agent command that cannot start.
 */
function failureHelp(code: string, words: string | undefined): string | null {
  if (code === FAILURE_KIND.agentAuth || (code === FAILURE_KIND.agentError && /not logged in|please run \/login/i.test(words ?? '')))
    return 'docs/troubleshooting.md#not-logged-in';
  if (code === FAILURE_KIND.agentNotStarted) return 'docs/troubleshooting.md#the-agent-command';
  return null;
}

const cut = (text: string) => (text.length > MAX_FAILURE_CHARS ? `${text.slice(0, MAX_FAILURE_CHARS)}…` : text);

/** The log of a run: its progress batches' lines, in order. */
export function logLines(events: readonly RunEvent[]): string[] {
  const lines: string[] = [];
  for (const event of events) {
    if (event.type !== RUN_EVENT.progress) continue;
    const batch = event.data?.lines;
    if (Array.isArray(batch)) for (const line of batch) if (typeof line === 'string') lines.push(line);
  }
  return lines;
}

/** The prompt its runner reported (the last one: a retried agent reports again), or null before it has. */
export function reportedPrompt(events: readonly RunEvent[]): Record<string, unknown> | null {
  for (let i = events.length - 1; i >= 0; i--) if (events[i]!.type === RUN_EVENT.prompt) return events[i]!.data;
  return null;
}

/**
 * Tokens and cost so far of a run still going: its runner's latest progress report (cumulative).
 * Null once the run has its final usage, or before a report.
 */
export function liveUsage(run: Run, events: readonly RunEvent[]): { usage: Usage; tokens: number | null; costUsd: number | null } | null {
  if (run.usage !== null || run.finishedAt !== null) return null;
  // A retried agent starts over: only reports after its last start count.
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i]!;
    if (event.type === RUN_EVENT.started || event.type === RUN_EVENT.retrying) return null;
    if (event.type !== RUN_EVENT.progress || !event.data?.usage || typeof event.data.usage !== 'object') continue;
    const usage = event.data.usage as Usage;
    const cost = event.data.costUsd;
    return { usage, tokens: totalTokens(usage), costUsd: typeof cost === 'number' ? cost : null };
  }
  return null;
}
