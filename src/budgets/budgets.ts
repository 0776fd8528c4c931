/**
 * Daily budgets: the tokens and cost agents may use per day (in `timezone`), globally, per
 * repository and per stage. A run is held while any budget of its scopes is spent (used >= limit);
 * a run already running when that happens finishes, so `used` may end above `limit`.
 */

/** One scope's daily limits; an absent limit is no limit. */
export interface BudgetLimit {
  tokens?: number;
  costUsd?: number;
}

export interface BudgetsConfig {
  /** IANA zone whose calendar days the budgets count. @default 'UTC' */
  timezone: string;
  global: BudgetLimit;
  /** By `OWNER/REPO`. */
  repositories: Readonly<Record<string, BudgetLimit>>;
  /** By stage name. */
  stages: Readonly<Record<string, BudgetLimit>>;
}

export const BUDGET_KIND = { global: 'global', repository: 'repository', stage: 'stage' } as const;
export type BudgetKind = (typeof BUDGET_KIND)[keyof typeof BUDGET_KIND];

/** A scope as stored and as the API names it: `global`, `repository:OWNER/REPO`, `stage:NAME`. */
export type BudgetScope = string;

export function scopeName(kind: BudgetKind, name?: string): BudgetScope {
  return kind === BUDGET_KIND.global ? 'global' : `${kind}:${name}`;
}

/** The scopes whose budgets a run of `stage` in `owner/repo` spends from (and is held by). */
export function scopesOf(run: { owner: string; repo: string; stage: string }): BudgetScope[] {
  return ['global', scopeName(BUDGET_KIND.repository, `${run.owner}/${run.repo}`), scopeName(BUDGET_KIND.stage, run.stage)];
}

export function parseScope(scope: string): { kind: BudgetKind; name: string | null } | null {
  if (scope === 'global') return { kind: BUDGET_KIND.global, name: null };
  const match = /^(repository|stage):(.+)$/.exec(scope);
  return match ? { kind: match[1] as BudgetKind, name: match[2]! } : null;
}

const hasLimit = (limit: BudgetLimit | undefined): limit is BudgetLimit => limit?.tokens !== undefined || limit?.costUsd !== undefined;

/** Every scope with a configured limit, global first, then repositories and stages by name. */
export function configuredBudgets(config: BudgetsConfig): Map<BudgetScope, BudgetLimit> {
  const out = new Map<BudgetScope, BudgetLimit>();
  if (hasLimit(config.global)) out.set('global', config.global);
  for (const [name, limit] of Object.entries(config.repositories).sort(([a], [b]) => a.localeCompare(b))) {
    if (hasLimit(limit)) out.set(scopeName(BUDGET_KIND.repository, name), limit);
  }
  for (const [name, limit] of Object.entries(config.stages).sort(([a], [b]) => a.localeCompare(b))) {
    if (hasLimit(limit)) out.set(scopeName(BUDGET_KIND.stage, name), limit);
  }
  return out;
}

export function hasBudgets(config: BudgetsConfig): boolean {
  return configuredBudgets(config).size > 0;
}

/** A limit and what was used of it today. */
export interface BudgetAmount {
  limit: number;
  used: number;
  /** Never below 0: a run already running may take `used` past `limit`. */
  remaining: number;
}

/** One scope's budget today (`GET /api/budgets`). */
export interface BudgetStatus {
  scope: BudgetScope;
  kind: BudgetKind;
  /** `OWNER/REPO`, the stage name, or null for global. */
  name: string | null;
  tokens: BudgetAmount | null;
  costUsd: BudgetAmount | null;
  /** Today's limits were set through the API rather than taken from baton.yaml. */
  raised: boolean;
  /** Used up (tokens or cost): new runs of this scope are held. */
  exhausted: boolean;
}

function amount(limit: number | undefined, used: number): BudgetAmount | null {
  if (limit === undefined) return null;
  return { limit, used, remaining: Math.max(0, limit - used) };
}

/** Builds one scope's status from its configured limit, today's API limit (if any) and usage. */
export function budgetStatus(
  scope: BudgetScope,
  configured: BudgetLimit,
  set: { tokens: number | null; costUsd: number | null } | undefined,
  used: { tokens: number; costUsd: number } | undefined,
): BudgetStatus {
  const parsed = parseScope(scope)!;
  const tokens = amount(set?.tokens ?? configured.tokens, used?.tokens ?? 0);
  // Cost is a float sum; round what people see to a tenth of a cent's precision.
  const costUsd = amount(set?.costUsd ?? configured.costUsd, round(used?.costUsd ?? 0));
  return {
    scope,
    kind: parsed.kind,
    name: parsed.name,
    tokens,
    costUsd: costUsd && { ...costUsd, remaining: round(costUsd.remaining) },
    raised: set !== undefined && (set.tokens !== null || set.costUsd !== null),
    exhausted: (tokens !== null && tokens.used >= tokens.limit) || (costUsd !== null && costUsd.used >= costUsd.limit),
  };
}

const round = (usd: number) => Math.round(usd * 1e6) / 1e6;

/** The first spent budget among a run's scopes (global, then repository, then stage), if any. */
export function blockingBudget(statuses: ReadonlyMap<BudgetScope, BudgetStatus>, run: { owner: string; repo: string; stage: string }) {
  for (const scope of scopesOf(run)) {
    const status = statuses.get(scope);
    if (status?.exhausted) return status;
  }
  return undefined;
}

/** Why a run is held, for the run's record (API, CLI, dashboard); the issue comment says less. */
export function holdReason(status: BudgetStatus, resetsAt: string): string {
  const what = status.kind === BUDGET_KIND.global ? 'the global daily budget' : `the daily budget of ${status.kind} ${status.name}`;
  const spent: string[] = [];
  if (status.tokens && status.tokens.used >= status.tokens.limit) {
    spent.push(`${status.tokens.used.toLocaleString('en-US')} of ${status.tokens.limit.toLocaleString('en-US')} tokens used`);
  }
  if (status.costUsd && status.costUsd.used >= status.costUsd.limit) {
    spent.push(`$${status.costUsd.used.toFixed(2)} of $${status.costUsd.limit.toFixed(2)} used`);
  }
  return `${what} is spent (${spent.join(', ')}); the run starts when the budget resets at ${resetsAt} or is raised`;
}
