import { Hono, type MiddlewareHandler } from 'hono';
import type { Logger } from '../log/index.js';
import type { MetricsRegistry } from '../metrics/index.js';
import type { FullRunEngine, RunQueries } from '../runs/index.js';
import type { TokenStore } from '../tokens/index.js';
import { isWorkspaceCallback, requireToken } from './auth.js';
import { errorHandler, notFound } from './errors.js';
import type { EventHub } from './event-hub.js';
import { callbackRoutes } from './routes-callbacks.js';
import { dashboardRoutes } from './routes-dashboard.js';
import { eventRoutes } from './routes-events.js';
import { healthRoutes, type ReadinessCheck } from './routes-health.js';
import { metricsRoutes } from './routes-metrics.js';
import { queueRoutes } from './routes-queue.js';
import { runsRoutes, type RunSubmitter } from './routes-runs.js';

/** The services the routes stand on; the composition root (`src/server/`) makes them. */
export interface HttpDeps {
  logger: Logger;
  /** Run changes: callbacks, operator actions. */
  engine: FullRunEngine;
  /** Every read of runs. */
  runs: RunQueries;
  tokens: TokenStore;
  metrics: MetricsRegistry;
  events: EventHub;
  /** The forge webhook endpoints (`/webhook/gitea…`), which verify their own signatures. */
  webhooks: Hono;
  /** Asked on every `GET /ready`. */
  readiness: () => readonly ReadinessCheck[];
  /** `api.publicQueue` / `api.publicMetrics`: serve those two without a token. */
  publicQueue: boolean;
  publicMetrics: boolean;
  /** GITEA_URL, for the issue links in run views. */
  forgeUrl?: string;
  /** Queues a run asked for through `POST /api/runs`. */
  submitRun?: RunSubmitter;
  /** Told of every forge delivery that was accepted (2xx): readiness knows a forge is talking to baton. */
  onForgeDelivery?: () => void;
  now: () => number;
}

/**
 * The HTTP app: routes over services, with one error envelope (`{ error: { code, message } }`)
 * and the token check as middleware in front of everything that needs it. A new route group is
 * one more `app.route` below (and its auth rule next to the others).
 */
export function createHttpApp(deps: HttpDeps): Hono {
  const app = new Hono();
  app.onError(errorHandler(deps.logger));
  app.notFound(notFound);

  // Token checks come before any route: every /api/* path except the workspace callbacks, which
  // carry their own per-run token; /webhook/* verifies the forge's signature itself.
  const tokenRequired = requireToken(deps.tokens);
  app.use('/api/*', requireToken(deps.tokens, { skip: (c) => isWorkspaceCallback(c.req.path) }));
  if (!deps.publicQueue) app.use('/queue', tokenRequired);
  app.use('/webhook/gitea*', countWebhooks(deps.metrics, deps.onForgeDelivery));

  app.route('/', healthRoutes(deps.readiness));
  app.route('/', queueRoutes(deps.runs, deps.now));
  app.route('/', callbackRoutes(deps.engine, deps.logger));
  app.route('/', deps.webhooks);
  app.route('/', metricsRoutes(deps.metrics, deps.publicMetrics ? undefined : tokenRequired));
  app.route('/', runsRoutes({ engine: deps.engine, runs: deps.runs, forgeUrl: deps.forgeUrl, now: deps.now, submit: deps.submitRun }));
  app.route('/', eventRoutes(deps.events));
  app.route('/', dashboardRoutes(deps.tokens));
  return app;
}

/** Counts incoming forge deliveries by how they were answered, and tells of the accepted ones. */
function countWebhooks(metrics: MetricsRegistry, onAccepted?: () => void): MiddlewareHandler {
  const received = metrics.counter('baton_webhook_received_total', 'Incoming forge webhook deliveries by result.');
  return async (c, next) => {
    await next();
    const result = webhookResult(c.res.status);
    received.inc({ result });
    // Only what the ingress accepted (signed, when a secret is set): a forged request must not move /ready.
    if (result === 'accepted' || result === 'duplicate') onAccepted?.();
  };
}

/** 202 accepted (queued or ignored with a reason), 200 a repeated delivery, 4xx refused. */
function webhookResult(status: number): string {
  if (status === 202) return 'accepted';
  if (status === 200) return 'duplicate';
  if (status === 401) return 'unauthorized';
  if (status === 413) return 'too_large';
  return status < 500 ? 'rejected' : 'error';
}
