import type { Kysely } from 'kysely';
import type { Database } from '../store/index.js';
import { budgetStatus, configuredBudgets, type BudgetLimit, type BudgetScope, type BudgetsConfig, type BudgetStatus } from './budgets.js';
import { nonNegative } from './claims.js';
import { dayKey, nextDayStart } from './day.js';

/** Today's budgets, as every replica reads them from the database. */
export interface BudgetDay {
  /** `YYYY-MM-DD` in the budgets' zone. */
  day: string;
  timezone: string;
  /** Start of the next day in that zone (epoch ms): when spent budgets reset. */
  resetsAt: number;
  /** Every configured scope, in `configuredBudgets` order. */
  budgets: Map<BudgetScope, BudgetStatus>;
}

/**
 * Adds one completion's usage to today's row of each of its scopes. Called in the completion's
 * own transaction; the increment is done by the database (`ON CONFLICT … DO UPDATE SET tokens =
 * tokens + …`), so completions on several replicas at once all count.
 */
export async function addUsage(
  db: Kysely<Database>,
  entry: { day: string; scopes: readonly BudgetScope[]; tokens: number; costUsd: number; now: number },
): Promise<void> {
  // Budgets only ever grow: a negative amount would switch a spent budget back on.
  const tokens = nonNegative(entry.tokens);
  const costUsd = nonNegative(entry.costUsd);
  if (entry.scopes.length === 0) return;
  await db
    .insertInto('budget_usage')
    .values(
      entry.scopes.map((scope) => ({
        day: entry.day,
        scope,
        tokens,
        cost_usd: costUsd,
        runs: 1,
        updated_at: entry.now,
      })),
    )
    .onConflict((oc) =>
      oc.columns(['day', 'scope']).doUpdateSet((eb) => ({
        tokens: eb('budget_usage.tokens', '+', eb.ref('excluded.tokens')),
        cost_usd: eb('budget_usage.cost_usd', '+', eb.ref('excluded.cost_usd')),
        runs: eb('budget_usage.runs', '+', 1),
        updated_at: eb.ref('excluded.updated_at'),
      })),
    )
    .execute();
}

/** Today's status of every configured budget (two small reads: usage and the API's limits). */
export async function readBudgetDay(db: Kysely<Database>, config: BudgetsConfig, t: number): Promise<BudgetDay> {
  const day = dayKey(t, config.timezone);
  const configured = configuredBudgets(config);
  const budgets = new Map<BudgetScope, BudgetStatus>();
  if (configured.size > 0) {
    const [usage, limits] = await Promise.all([
      db.selectFrom('budget_usage').select(['scope', 'tokens', 'cost_usd']).where('day', '=', day).execute(),
      db.selectFrom('budget_limits').select(['scope', 'tokens', 'cost_usd']).where('day', '=', day).execute(),
    ]);
    const used = new Map(usage.map((u) => [u.scope, { tokens: Number(u.tokens), costUsd: Number(u.cost_usd) }]));
    const set = new Map(
      limits.map((l) => [
        l.scope,
        { tokens: l.tokens === null ? null : Number(l.tokens), costUsd: l.cost_usd === null ? null : Number(l.cost_usd) },
      ]),
    );
    for (const [scope, limit] of configured) budgets.set(scope, budgetStatus(scope, limit, set.get(scope), used.get(scope)));
  }
  return { day, timezone: config.timezone, resetsAt: nextDayStart(t, config.timezone), budgets };
}

/**
 * Sets today's limits of one configured scope (an operator raising a spent budget). A key left
 * out keeps what applies now. Returns false when the scope has no configured budget.
 */
export async function setTodayLimits(
  db: Kysely<Database>,
  config: BudgetsConfig,
  scope: BudgetScope,
  limits: BudgetLimit,
  t: number,
): Promise<boolean> {
  if (!configuredBudgets(config).has(scope)) return false;
  const day = dayKey(t, config.timezone);
  const row = { day, scope, tokens: limits.tokens ?? null, cost_usd: limits.costUsd ?? null, updated_at: t };
  await db
    .insertInto('budget_limits')
    .values(row)
    .onConflict((oc) =>
      oc.columns(['day', 'scope']).doUpdateSet((eb) => ({
        // A key not given keeps the value set earlier today.
        tokens: limits.tokens === undefined ? eb.ref('budget_limits.tokens') : limits.tokens,
        cost_usd: limits.costUsd === undefined ? eb.ref('budget_limits.cost_usd') : limits.costUsd,
        updated_at: t,
      })),
    )
    .execute();
  return true;
}
