import type { MetricsRegistry } from '../metrics/index.js';
import { isFinal, RUN_EVENT } from './states.js';
import type { BudgetService } from './budget-service.js';
import type { RunEngine, RunQueries } from './types.js';
import { totalTokens } from './usage.js';

export interface RunMetricsOptions {
  registry: MetricsRegistry;
  /** Whose committed events feed the histograms and counters. */
  engine: Pick<RunEngine, 'on'>;
  queries: Pick<RunQueries, 'overview'>;
  now: () => number;
  /** Daily budgets: what is left per scope and the held runs, read at each scrape like the gauges above. */
  budgets?: Pick<BudgetService, 'overview'>;
}

/**
 * Registers baton's run metrics. Gauges that describe shared state (runs by status, queue depth,
 * live workspaces, today's tokens and cost) are read from the database at each scrape, in one
 * `overview` (three queries), so every replica reports the same numbers; histograms and counters
 * count what this replica saw. Returns the function that stops counting.
 */
export function registerRunMetrics(options: RunMetricsOptions): () => void {
  const { registry, engine, queries, now, budgets } = options;
  const runs = registry.gauge('baton_runs', 'Runs in the database by stage and status.');
  const depth = registry.gauge('baton_queue_depth', 'Queued runs waiting for a slot.');
  const live = registry.gauge('baton_live_workspaces', 'Workspaces provisioning or running (concurrency slots in use).');
  const concurrency = registry.gauge('baton_queue_concurrency', 'Configured concurrency limit.');
  const paused = registry.gauge('baton_queue_paused', '1 while dispatch is paused.');
  const tokensToday = registry.gauge('baton_tokens_today', 'Input + output tokens of runs finished since 00:00 UTC.');
  const costToday = registry.gauge('baton_cost_usd_today', 'Cost in USD of runs finished since 00:00 UTC.');
  const held = registry.gauge('baton_runs_held', 'Runs held because a daily budget is spent.');
  const remaining = registry.gauge(
    'baton_budget_remaining',
    "What is left of today's budget by scope (global, repository:OWNER/REPO, stage:NAME) and unit (tokens, usd).",
  );
  const duration = registry.histogram('baton_run_duration_seconds', "From workspace up to the run's end, by stage and outcome.");
  const latency = registry.histogram('baton_dispatch_latency_seconds', 'From a run being due to being claimed, by stage.');
  const tokens = registry.counter('baton_run_tokens_total', 'Input + output tokens of runs finished on this replica.');
  const cost = registry.counter('baton_run_cost_usd_total', 'Cost in USD of runs finished on this replica.');

  registry.collect(async () => {
    const { summary, counts } = await queries.overview(now());
    runs.reset();
    for (const { stage, status, count } of counts) runs.set({ stage, status }, count);
    depth.set({}, summary.queued);
    live.set({}, summary.provisioning + summary.running);
    concurrency.set({}, summary.concurrency);
    paused.set({}, summary.paused ? 1 : 0);
    tokensToday.set({}, summary.today.tokens);
    costToday.set({}, summary.today.costUsd);
    if (budgets) {
      const today = await budgets.overview(now());
      held.set({}, today.held);
      remaining.reset();
      for (const b of today.budgets) {
        if (b.tokens) remaining.set({ scope: b.scope, unit: 'tokens' }, b.tokens.remaining);
        if (b.costUsd) remaining.set({ scope: b.scope, unit: 'usd' }, b.costUsd.remaining);
      }
    }
  });

  return engine.on('run:event', (event, run) => {
    if (event.type === RUN_EVENT.claimed && run.claimedAt !== null) {
      latency.observe({ stage: run.stage }, Math.max(0, run.claimedAt - run.runAt) / 1000);
    }
    if (event.toStatus && isFinal(event.toStatus) && event.toStatus === run.status) {
      if (run.startedAt !== null && run.finishedAt !== null) {
        duration.observe({ stage: run.stage, status: run.status }, Math.max(0, run.finishedAt - run.startedAt) / 1000);
      }
      tokens.inc({ stage: run.stage }, totalTokens(run.usage) ?? 0);
      cost.inc({ stage: run.stage }, run.costUsd ?? 0);
    }
  });
}
