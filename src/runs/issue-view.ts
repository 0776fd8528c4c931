import type { RunStatus } from './states.js';
import type { Run } from './types.js';
import { totalTokens } from './usage.js';

/**
 * The SDLC view of one issue: every run of the issue and of the pull requests linked to it, in
 * the order they were queued, grouped into steps (consecutive runs of one stage), with how long
 * each waited in the queue, ran, and how long the issue waited between steps.
 *
 * How a pull request is linked to its issue: by what the pipeline records on every PR run, the
 * PR's head branch (`payload.headRef`). The develop and fix-bug prompts name their branches
 * `feature/issue-N-<slug>` and `fix/issue-N-<slug>`, so a PR whose head branch has a path segment
 * `issue-N` or starting `issue-N-` belongs to issue N. The PR body's `Closes #N` is not recorded
 * (the pipeline keeps no bodies), so a PR on another branch name (a release branch) stays on its own.
 */
export interface IssueView {
  owner: string;
  repo: string;
  number: number;
  /** The repository is declared in baton.yaml, not on the forge (no links to it). */
  declared: boolean;
  /** The pull requests linked to the issue, by number. */
  pullRequests: Array<{ number: number; headRef: string | null; title: string | null }>;
  /** Every run of the issue and its pull requests, oldest first. */
  runs: IssueRun[];
  /** Consecutive runs of one stage, in order; a stage that comes back (review after rework) is a new step. */
  steps: IssueStep[];
  totals: IssueTotals;
}

export interface IssueRun {
  id: number;
  stage: string;
  /** The issue's number, or the pull request's. */
  number: number;
  pullRequest: boolean;
  status: RunStatus;
  attempts: number;
  maxAttempts: number;
  createdAt: number;
  startedAt: number | null;
  finishedAt: number | null;
  /** Queued until it started (or ended without starting; until now while still queued). */
  queuedMs: number;
  /** Started until finished; null before it finished or when it never started. */
  durationMs: number | null;
  tokens: number | null;
  costUsd: number | null;
  lastError: string | null;
}

export interface IssueStep {
  stage: string;
  /** The ids of its runs, oldest first. */
  runIds: number[];
  /** The status of its newest run. */
  status: RunStatus;
  startedAt: number;
  /** When its last run finished; null while one is live. */
  finishedAt: number | null;
  /**
   * From the previous step's end to this step's first run being queued: how long the issue sat
   * between stages (a person reviewing, a label not yet set). 0 when it began before the previous
   * step ended; null for the first step.
   */
  waitMs: number | null;
  queuedMs: number;
  durationMs: number;
  attempts: number;
  tokens: number;
  costUsd: number;
}

export interface IssueTotals {
  runs: number;
  attempts: number;
  /** Sums over the runs. */
  queuedMs: number;
  durationMs: number;
  /** Sum of the waits between steps. */
  waitMs: number;
  /** From the first run queued to the last one finished (to now while one is live). */
  elapsedMs: number;
  tokens: number;
  costUsd: number;
}

/**
 * Whether a pull request's head branch names issue `number`: a path segment `issue-N` or
 * `issue-N-<slug>` (`feature/issue-42-retry`, `fix/issue-42`), never `issue-420`.
 */
export function branchNamesIssue(headRef: string, number: number): boolean {
  const mark = `issue-${number}`;
  return headRef.split('/').some((segment) => segment === mark || segment.startsWith(`${mark}-`));
}

/** Rounds a dollar sum to micro-dollars, so adding floats does not show as $0.30000000000000004. */
export function roundUsd(usd: number): number {
  return Math.round(usd * 1e6) / 1e6;
}

/** The view from the issue's runs and its linked PRs' runs (any order); `now` ends what is still live. */
export function buildIssueView(issue: { owner: string; repo: string; number: number }, runs: readonly Run[], now: number): IssueView {
  const ordered = [...runs].sort((a, b) => a.createdAt - b.createdAt || a.id - b.id);
  const pullRequests = new Map<number, IssueView['pullRequests'][number]>();
  for (const run of ordered) {
    if (run.number === null || run.number === issue.number) continue;
    const known = pullRequests.get(run.number);
    const headRef = typeof run.payload.headRef === 'string' ? run.payload.headRef : null;
    const title = typeof run.payload.title === 'string' ? run.payload.title : null;
    pullRequests.set(run.number, { number: run.number, headRef: known?.headRef ?? headRef, title: title ?? known?.title ?? null });
  }

  const issueRuns = ordered.map((run) => toIssueRun(run, issue.number, now));
  const steps: IssueStep[] = [];
  for (const run of issueRuns) {
    const last = steps[steps.length - 1];
    if (last && last.stage === run.stage) {
      addToStep(last, run);
      continue;
    }
    const previousEnd = last ? last.finishedAt : undefined;
    const step: IssueStep = {
      stage: run.stage,
      runIds: [],
      status: run.status,
      startedAt: run.createdAt,
      finishedAt: null,
      waitMs: previousEnd === undefined ? null : previousEnd === null ? 0 : Math.max(0, run.createdAt - previousEnd),
      queuedMs: 0,
      durationMs: 0,
      attempts: 0,
      tokens: 0,
      costUsd: 0,
    };
    addToStep(step, run);
    steps.push(step);
  }

  // Not finished (queued, running, or held by a budget): the issue is still under way.
  const live = issueRuns.some((r) => r.finishedAt === null);
  const lastEnd = Math.max(0, ...issueRuns.map((r) => r.finishedAt ?? 0));
  const totals: IssueTotals = {
    runs: issueRuns.length,
    attempts: sum(issueRuns.map((r) => r.attempts)),
    queuedMs: sum(issueRuns.map((r) => r.queuedMs)),
    durationMs: sum(issueRuns.map((r) => r.durationMs ?? 0)),
    waitMs: sum(steps.map((s) => s.waitMs ?? 0)),
    elapsedMs: issueRuns.length === 0 ? 0 : (live ? now : lastEnd) - issueRuns[0]!.createdAt,
    tokens: sum(issueRuns.map((r) => r.tokens ?? 0)),
    costUsd: roundUsd(sum(issueRuns.map((r) => r.costUsd ?? 0))),
  };
  return {
    ...issue,
    declared: ordered.some((run) => run.payload.declared === true),
    pullRequests: [...pullRequests.values()].sort((a, b) => a.number - b.number),
    runs: issueRuns,
    steps,
    totals,
  };
}

function toIssueRun(run: Run, issueNumber: number, now: number): IssueRun {
  // A fast agent may call back while its run is still provisioning: then it has no startedAt,
  // and its claim is the nearest thing to a start.
  const startedAt = run.startedAt ?? (run.finishedAt !== null ? run.claimedAt : null);
  const queuedUntil = startedAt ?? run.finishedAt ?? now;
  return {
    id: run.id,
    stage: run.stage,
    number: run.number ?? issueNumber,
    pullRequest: run.number !== issueNumber,
    status: run.status,
    attempts: run.attempts,
    maxAttempts: run.maxAttempts,
    createdAt: run.createdAt,
    startedAt,
    finishedAt: run.finishedAt,
    queuedMs: Math.max(0, queuedUntil - run.createdAt),
    durationMs: startedAt !== null && run.finishedAt !== null ? Math.max(0, run.finishedAt - startedAt) : null,
    tokens: totalTokens(run.usage),
    costUsd: run.costUsd,
    lastError: run.lastError,
  };
}

function addToStep(step: IssueStep, run: IssueRun): void {
  step.runIds.push(run.id);
  step.status = run.status;
  step.queuedMs += run.queuedMs;
  step.durationMs += run.durationMs ?? 0;
  step.attempts += run.attempts;
  step.tokens += run.tokens ?? 0;
  step.costUsd = roundUsd(step.costUsd + (run.costUsd ?? 0));
  // A step has ended only when all its runs have.
  const ends = step.runIds.length === 1 ? run.finishedAt : step.finishedAt === null ? null : run.finishedAt;
  step.finishedAt = ends === null ? null : Math.max(step.finishedAt ?? 0, ends);
}

function sum(values: readonly number[]): number {
  return values.reduce((a, b) => a + b, 0);
}
