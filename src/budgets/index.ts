export { limitsSection, budgetsSection } from './config-section.js';
export { runLimits, DURATION_GRACE_MS, type LimitsConfig, type StageLimits, type RunLimits } from './limits.js';
export {
  BUDGET_KIND,
  blockingBudget,
  configuredBudgets,
  hasBudgets,
  holdReason,
  parseScope,
  scopesOf,
  type BudgetAmount,
  type BudgetKind,
  type BudgetLimit,
  type BudgetScope,
  type BudgetsConfig,
  type BudgetStatus,
} from './budgets.js';
export { dayKey, nextDayStart, isTimeZone } from './day.js';
export { addUsage, readBudgetDay, setTodayLimits, type BudgetDay } from './ledger.js';
export { checkClaim, nonNegative, MAX_CLAIMED_COST_USD, MAX_CLAIMED_TOKENS, type ClaimKind, type RefusedClaim } from './claims.js';
