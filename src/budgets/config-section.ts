import { int, invalid, join, mapping, number, record, section, show, text, type ResolveContext } from '../config-schema/index.js';
import type { BudgetLimit, BudgetsConfig } from './budgets.js';
import { isTimeZone } from './day.js';
import type { LimitsConfig } from './limits.js';

const minutes = (m: number) => Math.round(m * 60_000);

/**
 * `limits:` in baton.yaml: every run's token cap and duration limit, unless its stage sets its own
 * (`pipeline.stages.<name>.tokenCap`, `.maxDurationMinutes`).
 *
 * ```yaml
 * limits:
 *   tokenCap: 400000          # BATON_TOKEN_CAP
 *   maxDurationMinutes: 60    # RUN_MAX_DURATION_MINUTES
 *   agentAttempts: 3          # AGENT_RUN_ATTEMPTS
 * ```
 */
export const limitsSection = section(
  mapping({
    tokenCap: int({
      env: 'BATON_TOKEN_CAP',
      min: 0,
      default: 0,
      doc: 'tokens (input + output) an agent may use before its runner stops it and the run fails; 0 = no cap',
    }),
    agentAttempts: int({
      env: 'AGENT_RUN_ATTEMPTS',
      min: 1,
      default: 3,
      doc: 'attempts of the agent per run, or per turn of a conversation (the first included) when it fails for a reason that passes (API overloaded or rate-limited, network, workspace lost); 1 = no retries',
    }),
    replyWaitHours: number({
      env: 'RUN_REPLY_WAIT_HOURS',
      min: 0.001,
      default: 72,
      doc: 'how long a run whose agent asked a question waits for a reply on the issue before it ends expired',
    }),
    maxDurationMinutes: number({
      env: 'RUN_MAX_DURATION_MINUTES',
      min: 0.01,
      doc: 'longest a run may take (a conversation’s turns together, not the waits for replies): the runner stops the agent, and baton ends the run timed_out soon after; default STALE_WORKSPACE_MINUTES',
    }),
  }),
  (v): LimitsConfig => ({
    tokenCap: v.tokenCap,
    agentAttempts: v.agentAttempts,
    replyWaitMs: Math.round(v.replyWaitHours * 3_600_000),
    ...(v.maxDurationMinutes !== undefined ? { maxDurationMs: minutes(v.maxDurationMinutes) } : {}),
  }),
);

/** A scope's daily limits in baton.yaml; 0 (the default) is no limit. */
const dailyLimits = () =>
  mapping({
    tokensPerDay: int({ min: 0, doc: 'input + output tokens its runs may use per day; 0 = no limit' }),
    costUsdPerDay: number({ min: 0, doc: 'cost in USD its runs may use per day; 0 = no limit' }),
  });

const toLimit = (v: { tokensPerDay?: number; costUsdPerDay?: number }): BudgetLimit => ({
  ...(v.tokensPerDay ? { tokens: v.tokensPerDay } : {}),
  ...(v.costUsdPerDay ? { costUsd: v.costUsdPerDay } : {}),
});

/** `owner/repo`, or deeper for a GitLab project in a subgroup (`acme/platform/app`: the namespace is the owner). */
const REPOSITORY = /^[A-Za-z0-9_.-]+(\/[A-Za-z0-9_.-]+)+$/;

/**
 * `budgets:` in baton.yaml: daily token and cost budgets, globally, per repository and per stage.
 * When one of a run's budgets is spent its new runs are held (status `held`) until the next day
 * in `timezone`, or until the budget is raised (`PUT /api/budgets`, or a restart with a higher
 * limit); runs already running finish.
 *
 * ```yaml
 * budgets:
 *   timezone: Europe/Berlin     # BUDGET_TIMEZONE
 *   tokensPerDay: 5000000       # BUDGET_TOKENS_PER_DAY
 *   costUsdPerDay: 100          # BUDGET_COST_USD_PER_DAY
 *   repositories:
 *     acme/web: { costUsdPerDay: 20 }
 *   stages:
 *     develop: { tokensPerDay: 2000000 }
 * ```
 */
export const budgetsSection = section(
  mapping({
    timezone: text({
      env: 'BUDGET_TIMEZONE',
      default: 'UTC',
      doc: 'IANA time zone whose days the budgets count (they reset at its midnight)',
      check: (zone) => (isTimeZone(zone) ? undefined : invalid('must be an IANA time zone like Europe/Berlin')),
    }),
    tokensPerDay: int({
      env: 'BUDGET_TOKENS_PER_DAY',
      min: 0,
      default: 0,
      doc: 'input + output tokens all runs may use per day; 0 = no limit',
    }),
    costUsdPerDay: number({
      env: 'BUDGET_COST_USD_PER_DAY',
      min: 0,
      default: 0,
      doc: 'cost in USD all runs may use per day; 0 = no limit',
    }),
    repositories: record(dailyLimits(), {
      doc: 'OWNER/REPO to its own daily budget ({ tokensPerDay, costUsdPerDay })',
      key: (name) => (REPOSITORY.test(name) ? undefined : invalid('is not OWNER/REPO')),
    }),
    stages: record(dailyLimits(), { doc: 'stage name to its own daily budget ({ tokensPerDay, costUsdPerDay })' }),
  }),
  (v, ctx: ResolveContext<{ pipeline: { stages: ReadonlyArray<{ name: string }> } }>): BudgetsConfig => {
    const known = ctx.deps.pipeline.stages.map((s) => s.name);
    for (const name of Object.keys(v.stages)) {
      if (!known.includes(name))
        ctx.problem(`${join('budgets.stages', name)} names no stage of the pipeline (${known.join(', ')}), got ${show(name)}`);
    }
    const map = (entries: Record<string, { tokensPerDay?: number; costUsdPerDay?: number }>) =>
      Object.fromEntries(Object.entries(entries).map(([name, limit]) => [name, toLimit(limit)]));
    return {
      timezone: v.timezone,
      global: toLimit(v),
      repositories: map(v.repositories),
      stages: map(v.stages),
    };
  },
);
