import {
  blockingBudget,
  configuredBudgets,
  readBudgetDay,
  setTodayLimits,
  type BudgetLimit,
  type BudgetsConfig,
  type BudgetStatus,
} from '../budgets/index.js';
import type { Store } from '../store/index.js';
import { RUN_STATUS } from './states.js';

/** `GET /api/budgets`: today's budgets with what is left, and the runs they hold. */
export interface BudgetsOverview {
  timezone: string;
  /** Today in `timezone`, `YYYY-MM-DD`. */
  day: string;
  /** When today's budgets reset (epoch ms). */
  resetsAt: number;
  /** Runs held now, by any budget. */
  held: number;
  budgets: Array<BudgetStatus & { held: number }>;
}

export interface BudgetService {
  overview(now: number): Promise<BudgetsOverview>;
  /**
   * Sets today's limits of a configured scope; the dispatcher is woken so held runs the new
   * limit lets through start at once. null: the scope has no configured budget.
   */
  setToday(scope: string, limits: BudgetLimit, now: number): Promise<BudgetsOverview | null>;
  /** The scopes with a configured budget, for error messages. */
  scopes(): string[];
}

export function createBudgetService(options: { store: Store; config: BudgetsConfig; wake: () => void }): BudgetService {
  const { store, config } = options;

  async function overview(now: number): Promise<BudgetsOverview> {
    const [day, held] = await Promise.all([
      readBudgetDay(store.db, config, now),
      store.db.selectFrom('runs').select(['owner', 'repo', 'stage']).where('status', '=', RUN_STATUS.held).execute(),
    ]);
    const perScope = new Map<string, number>();
    for (const run of held) {
      const budget = blockingBudget(day.budgets, run);
      if (budget) perScope.set(budget.scope, (perScope.get(budget.scope) ?? 0) + 1);
    }
    return {
      timezone: day.timezone,
      day: day.day,
      resetsAt: day.resetsAt,
      held: held.length,
      budgets: [...day.budgets.values()].map((b) => ({ ...b, held: perScope.get(b.scope) ?? 0 })),
    };
  }

  return {
    overview,
    async setToday(scope, limits, now) {
      if (!(await setTodayLimits(store.db, config, scope, limits, now))) return null;
      options.wake();
      return overview(now);
    },
    scopes: () => [...configuredBudgets(config).keys()],
  };
}
