import { Hono, type MiddlewareHandler } from 'hono';
import type { MetricsRegistry } from '../metrics/index.js';
import { isFinal, type FullRunEngine } from '../runs/index.js';
import type { Store } from '../store/index.js';
import type { EventHub } from './event-hub.js';
import { queueSummary } from './queue-stats.js';
import { totalTokens } from './run-view.js';

export interface RunMetricsOptions {
  registry: MetricsRegistry;
  engine: FullRunEngine;
  store: Store;
  hub?: EventHub;
  now: () => number;
  /** Undelivered outbox rows; absent until an outbox is wired. */
  outboxBacklog?: () => Promise<number>;
}

/**
 * Registers baton's run metrics. Gauges that describe shared state (runs by status, queue depth,
 * live workspaces, today's tokens and cost) are read from the database at each scrape, so every
 * replica reports the same numbers; histograms and counters count what this replica saw.
 * Returns an unsubscribe function.
 */
export function registerRunMetrics(options: RunMetricsOptions): () => void {
  const { registry, engine, store, now } = options;
  const runs = registry.gauge('baton_runs', 'Runs in the database by stage and status.');
  const depth = registry.gauge('baton_queue_depth', 'Queued runs waiting for a slot.');
  const live = registry.gauge('baton_live_workspaces', 'Workspaces provisioning or running (concurrency slots in use).');
  const concurrency = registry.gauge('baton_queue_concurrency', 'Configured concurrency limit.');
  const paused = registry.gauge('baton_queue_paused', '1 while dispatch is paused.');
  const tokensToday = registry.gauge('baton_tokens_today', 'Input + output tokens of runs finished since 00:00 UTC.');
  const costToday = registry.gauge('baton_cost_usd_today', 'Cost in USD of runs finished since 00:00 UTC.');
  const backlog = registry.gauge('baton_outbox_backlog', 'Outbox messages (forge comments, event webhooks) not yet delivered.');
  const clients = registry.gauge('baton_event_stream_clients', 'Connected /api/events clients on this replica.');
  const duration = registry.histogram('baton_run_duration_seconds', "From workspace up to the run's end, by stage and outcome.");
  const latency = registry.histogram('baton_dispatch_latency_seconds', 'From a run being due to being claimed, by stage.');
  const tokens = registry.counter('baton_run_tokens_total', 'Input + output tokens of runs finished on this replica.');
  const cost = registry.counter('baton_run_cost_usd_total', 'Cost in USD of runs finished on this replica.');
  // Created here so the series exist (at zero) before the first delivery; the outbox increments it.
  const deliveries = registry.counter('baton_webhook_deliveries_total', 'Outbound event webhook deliveries by result.');
  for (const result of ['delivered', 'retried', 'failed']) deliveries.inc({ result }, 0);

  registry.collect(async () => {
    const [rows, summary] = await Promise.all([
      store.db
        .selectFrom('runs')
        .select(['stage', 'status', ({ fn }) => fn.countAll<number>().as('n')])
        .groupBy(['stage', 'status'])
        .execute(),
      queueSummary(engine, store, now()),
    ]);
    runs.reset();
    for (const row of rows) runs.set({ stage: row.stage, status: row.status }, Number(row.n));
    depth.set({}, summary.queued);
    live.set({}, summary.provisioning + summary.running);
    concurrency.set({}, summary.concurrency);
    paused.set({}, summary.paused ? 1 : 0);
    tokensToday.set({}, summary.today.tokens);
    costToday.set({}, summary.today.costUsd);
    if (options.outboxBacklog) backlog.set({}, await options.outboxBacklog());
    if (options.hub) clients.set({}, options.hub.clientCount);
  });

  return engine.subscribe((event, run) => {
    if (event.type === 'run:claimed' && run.claimedAt !== null) {
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

/** `GET /metrics` in the Prometheus text format; `guard` is the token check unless metrics are public. */
export function metricsRoutes(registry: MetricsRegistry, guard?: MiddlewareHandler): Hono {
  const app = new Hono();
  if (guard) app.use('/metrics', guard);
  app.get('/metrics', async (c) => c.body(await registry.render(), 200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' }));
  return app;
}
