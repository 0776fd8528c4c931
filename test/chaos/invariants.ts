import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import { until } from '../helpers/until.js';
import { runProcesses } from './proc.js';
import { OWNER, REPO, TERMINAL, type ApiRun, type Delivery, type World } from './world.js';

/** A status comment's kind, by the first characters of the built-in templates (comment-templates.ts). */
const KINDS: Array<[string, string]> = [
  ['⏳', 'queued'],
  ['🚀', 'started'],
  ['✅', 'succeeded'],
  ['❌', 'failed'],
  ['⌛', 'timed_out'],
  ['🛑', 'cancelled'],
  ['💀', 'dead'],
];

export interface Settled {
  runs: ApiRun[];
  /** From `since` until every run had ended. */
  drainMs: number;
  /** From `since` until every comment was posted and no process or workspace of a run was left. */
  cleanMs: number;
}

/**
 * The invariants of every scenario, once its faults are over: every accepted event became exactly
 * one run, and that run ended (`expected` says how, per issue; `succeeded` otherwise); each run's
 * status comments were posted exactly once each, in order (queued, started, its outcome); no
 * process of any run is left in /proc and no workspace directory on disk. Waits for each, bounded
 * by `timeoutMs`: a run still live then is a stuck run, and the failure lists them all.
 */
export async function expectSettled(
  world: World,
  deliveries: Delivery[],
  options: {
    since: number;
    expected?: Record<number, string | string[]>;
    timeoutMs?: number;
    /**
     * Events never answered 2xx that may still have been stored (a 503 whose insert committed
     * after its budget, a delivery whose answer a kill -9 cut off): at most one run each, never
     * required.
     */
    maybe?: Iterable<number>;
  },
): Promise<Settled> {
  const timeoutMs = options.timeoutMs ?? 150_000;
  const accepted = deliveries.filter((d) => d.accepted !== undefined);
  const numbers = new Set(accepted.map((d) => d.number));
  const maybe = new Set([...(options.maybe ?? [])].filter((n) => !numbers.has(n)));

  let runs: ApiRun[] = [];
  await until(
    async () => {
      runs = await world.runs();
      return (
        numbers.size > 0 && [...numbers].every((n) => runs.some((r) => r.number === n)) && runs.every((r) => TERMINAL.includes(r.status))
      );
    },
    'every accepted event to become a run that ended',
    timeoutMs,
    200,
  ).catch((err: Error) => {
    const missing = [...numbers].filter((n) => !runs.some((r) => r.number === n));
    const answers = accepted
      .filter((d) => missing.includes(d.number))
      .map((d) => `#${d.number} (delivery ${d.delivery}): ${d.answers.join(' | ')}`);
    const live = runs.filter((r) => !TERMINAL.includes(r.status));
    const about = (line: string) =>
      missing.some((n) => line.includes(`-${n}"`) || line.includes(`-${n}-`)) || live.some((r) => line.includes(`"runId":${r.id},`));
    throw new Error(
      `${err.message}\nno run for accepted events: ${answers.join('\n  ') || 'none'}\n` +
        `stuck: ${live.map((r) => `run ${r.id} #${r.number} ${r.status} (attempts ${r.attempts})`).join('; ') || 'none'}\n${world.output(about)}`,
    );
  });
  const drainMs = Date.now() - options.since;

  // Exactly one run per accepted event, and none for anything else (at most one for a maybe).
  const perIssue = new Map<number, ApiRun[]>();
  for (const run of runs) perIssue.set(run.number ?? -1, [...(perIssue.get(run.number ?? -1) ?? []), run]);
  const required = [...perIssue.keys()].filter((n) => !maybe.has(n));
  expect(required.sort((a, b) => a - b)).toEqual([...numbers].sort((a, b) => a - b));
  const duplicated = [...perIssue.entries()]
    .filter(([, list]) => list.length !== 1)
    .map(([n, list]) => `#${n}: runs ${list.map((r) => r.id).join(', ')}`);
  expect(duplicated, 'issues with more than one run').toEqual([]);

  const outcomes = runs.map((r) => ({ number: r.number, status: r.status, error: r.lastError }));
  const wrong = outcomes.filter((o) => {
    const want = options.expected?.[o.number!] ?? 'succeeded';
    return !(Array.isArray(want) ? want : [want]).includes(o.status);
  });
  expect(wrong, `runs that did not end as expected (${JSON.stringify(options.expected ?? {})})`).toEqual([]);

  // Status comments: each once, in order, naming the run; the outcome's is the run's status.
  const commentsOf = (number: number) =>
    world.gitea
      .comments(OWNER, REPO, number)
      .filter((c) => c.author === 'claude-dev')
      .map((c) => ({ kind: KINDS.find(([prefix]) => c.body.startsWith(prefix))?.[1] ?? 'other', body: c.body }));
  await until(
    () => runs.every((r) => commentsOf(r.number!).some((c) => c.kind === r.status)),
    'every run to have its final comment',
    timeoutMs,
    200,
  ).catch((err: Error) => {
    const missing = runs.filter((r) => !commentsOf(r.number!).some((c) => c.kind === r.status)).map((r) => `#${r.number} (${r.status})`);
    throw new Error(`${err.message}: missing on ${missing.join(', ')}\n${world.output()}`);
  });
  const badComments: string[] = [];
  for (const run of runs) {
    const kinds = commentsOf(run.number!).map((c) => c.kind);
    const want = ['queued', ...(run.status === 'dead' || !kinds.includes('started') ? [] : ['started']), run.status];
    if (JSON.stringify(kinds) !== JSON.stringify(want)) badComments.push(`#${run.number} run ${run.id}: ${kinds.join(', ')}`);
    for (const c of commentsOf(run.number!)) {
      if (!c.body.includes(`run ${run.id}`)) badComments.push(`#${run.number}: a comment not naming run ${run.id}: ${c.body.slice(0, 80)}`);
    }
  }
  expect(badComments, 'status comments not exactly once each and in order').toEqual([]);

  // Nothing of any run is left: no process, no workspace.
  const workspaces = () => {
    const dir = path.join(world.dataDir, 'workspaces');
    return fs.existsSync(dir) ? fs.readdirSync(dir) : [];
  };
  await until(
    () => runProcesses(world.dataDir).length === 0 && workspaces().length === 0,
    'no process and no workspace of a run left',
    timeoutMs,
    200,
  ).catch((err: Error) => {
    const processes = runProcesses(world.dataDir).map((p) => `pid ${p.pid} run ${p.runId}: ${p.command.slice(0, 120)}`);
    throw new Error(
      `${err.message}\nprocesses: ${processes.join('\n  ') || 'none'}\nworkspaces: ${workspaces().join(', ') || 'none'}\n${world.output()}`,
    );
  });
  return { runs, drainMs, cleanMs: Date.now() - options.since };
}

/** One line per figure, for the log of the test run (never asserted: timings depend on the machine). */
export function printFigures(scenario: string, figures: Record<string, string | number>): void {
  console.log(
    `[chaos] ${scenario}: ${Object.entries(figures)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
  );
}
