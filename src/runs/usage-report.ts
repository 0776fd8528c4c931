import { roundUsd } from './issue-view.js';
import type { Usage } from './types.js';

/**
 * Usage over a range of UTC days, grouped one way. A run counts on the day it finished: that is
 * when its agent reported what it used (a run still going has reported nothing yet).
 */
export const USAGE_GROUPS = ['day', 'repository', 'stage', 'issue'] as const;
export type UsageGroupBy = (typeof USAGE_GROUPS)[number];

/** The longest range one request may ask for (a year, leap years included). */
export const MAX_USAGE_DAYS = 366;

const DAY_MS = 24 * 60 * 60_000;

export interface UsageQuery {
  /** First day, `YYYY-MM-DD` (UTC), included. */
  from: string;
  /** Last day, `YYYY-MM-DD` (UTC), included. */
  to: string;
  groupBy: UsageGroupBy;
}

/** A finished run's part of the report: what `queries.usage` reads. */
export interface UsageRow {
  stage: string;
  owner: string;
  repo: string;
  number: number | null;
  finishedAt: number;
  usage: Usage | null;
  costUsd: number | null;
}

export interface UsageAmounts {
  runs: number;
  /** Input + output tokens, as everywhere in baton (cache reads and writes are counted apart). */
  tokens: number;
  inputTokens: number;
  outputTokens: number;
  cacheReadInputTokens: number;
  cacheCreationInputTokens: number;
  costUsd: number;
}

export interface UsageGroup extends UsageAmounts {
  /** `2026-11-30`, `acme/app`, `develop`, `acme/app#42` (`acme/app` for repository-wide runs). */
  key: string;
}

export interface UsageReport extends UsageQuery {
  /** The range as epoch ms: runs that finished at or after `since` and before `until`. */
  since: number;
  until: number;
  /**
   * By day: every day of the range, oldest first, days without runs included (a chart needs
   * them). Otherwise the groups that have runs, most tokens first.
   */
  groups: UsageGroup[];
  totals: UsageAmounts;
}

/** `2026-11-30` → the epoch ms of its 00:00 UTC; null for anything else (`2026-02-30` included). */
export function parseUtcDay(text: string): number | null {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  if (!match) return null;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const ms = Date.UTC(year, month - 1, day);
  // Date.UTC rolls 2026-02-30 over into March: a real date comes back unchanged.
  return utcDay(ms) === text ? ms : null;
}

/** The UTC day `t` falls in, `YYYY-MM-DD`. */
export function utcDay(t: number): string {
  return new Date(t).toISOString().slice(0, 10);
}

/** How many days `from`..`to` spans, both included. */
export function daysBetween(from: string, to: string): number {
  return Math.round((parseUtcDay(to)! - parseUtcDay(from)!) / DAY_MS) + 1;
}

/** `[since, until)` of the range, in epoch ms. */
export function usageBounds(query: Pick<UsageQuery, 'from' | 'to'>): { since: number; until: number } {
  return { since: parseUtcDay(query.from)!, until: parseUtcDay(query.to)! + DAY_MS };
}

function emptyAmounts(): UsageAmounts {
  return { runs: 0, tokens: 0, inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0, costUsd: 0 };
}

/** A count the agent reported, or 0 when it reported none or something that is not one. */
function count(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : 0;
}

function add(amounts: UsageAmounts, row: UsageRow): void {
  const usage = row.usage ?? {};
  const input = count(usage.inputTokens);
  const output = count(usage.outputTokens);
  amounts.runs += 1;
  amounts.inputTokens += input;
  amounts.outputTokens += output;
  amounts.tokens += input + output;
  amounts.cacheReadInputTokens += count(usage.cacheReadInputTokens);
  amounts.cacheCreationInputTokens += count(usage.cacheCreationInputTokens);
  amounts.costUsd = roundUsd(amounts.costUsd + count(row.costUsd));
}

function keyOf(row: UsageRow, groupBy: UsageGroupBy): string {
  switch (groupBy) {
    case 'day':
      return utcDay(row.finishedAt);
    case 'repository':
      return `${row.owner}/${row.repo}`;
    case 'stage':
      return row.stage;
    case 'issue':
      return row.number === null ? `${row.owner}/${row.repo}` : `${row.owner}/${row.repo}#${row.number}`;
  }
}

/** The report of `rows` (runs that finished in the range; others are left out). */
export function buildUsageReport(query: UsageQuery, rows: readonly UsageRow[]): UsageReport {
  const { since, until } = usageBounds(query);
  const groups = new Map<string, UsageGroup>();
  if (query.groupBy === 'day') {
    for (let t = since; t < until; t += DAY_MS) groups.set(utcDay(t), { key: utcDay(t), ...emptyAmounts() });
  }
  const totals = emptyAmounts();
  for (const row of rows) {
    if (row.finishedAt < since || row.finishedAt >= until) continue;
    const key = keyOf(row, query.groupBy);
    let group = groups.get(key);
    if (!group) groups.set(key, (group = { key, ...emptyAmounts() }));
    add(group, row);
    add(totals, row);
  }
  const list = [...groups.values()];
  if (query.groupBy !== 'day') list.sort((a, b) => b.tokens - a.tokens || b.costUsd - a.costUsd || (a.key < b.key ? -1 : 1));
  return { ...query, since, until, groups: list, totals };
}
