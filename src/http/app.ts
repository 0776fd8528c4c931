import { Hono, type MiddlewareHandler } from 'hono';
import type { Logger } from '../log/index.js';
import type { MetricsRegistry } from '../metrics/index.js';
import type { DeliveryInspector } from '../ingress/index.js';
import type { BudgetService, CallbackTokenChecks, RunService, Run, RunOutcome, RunQueries } from '../runs/index.js';
import type { SessionStore, TokenStore } from '../tokens/index.js';
import { identify, isWorkspaceCallback, requireToken, type Credentials } from './auth.js';
import { limitBody, errorHandler, notFound, securityHeaders } from '../web-kit/index.js';
import { createClientAddressResolver } from './client-address.js';
import type { DashboardSettings, HttpLimits } from './config-section.js';
import type { EventHub, ForgeWebRoots } from '../live-events/index.js';
import { budgetRoutes } from './routes-budgets.js';
import { callbackRoutes } from './routes-callbacks.js';
import { conversationRoutes } from './routes-conversation.js';
import { dashboardRoutes } from './routes-dashboard.js';
import { deliveriesRoutes } from './routes-deliveries.js';
import { eventRoutes } from './routes-events.js';
import { healthRoutes, type ReadinessCheck } from './routes-health.js';
import { insightsRoutes } from './routes-insights.js';
import { metricsRoutes } from './routes-metrics.js';
import { queueRoutes } from './routes-queue.js';
import { runsRoutes, type RunSubmitter } from './routes-runs.js';
import { tokenRoutes } from './routes-tokens.js';

/** The services the routes stand on; the composition root (`src/server/`) makes them. */
export interface HttpDeps {
  logger: Logger;
  /** Run changes: callbacks, operator actions. */
  engine: RunService;
  /** Every read of runs. */
  runs: RunQueries;
  /** Which run a workspace's callback token speaks for. */
  callbackTokens: CallbackTokenChecks;
  tokens: TokenStore;
  /** Dashboard sessions, made at login from a token. */
  sessions: SessionStore;
  metrics: MetricsRegistry;
  events: EventHub;
  /** The forge webhook endpoints (`/webhook/gitea…`), which verify their own signatures and bound their own bodies. */
  webhooks: Hono;
  /** Asked on every `GET /ready`. */
  readiness: () => readonly ReadinessCheck[];
  /** `api.publicQueue` / `api.publicMetrics`: serve those two without a token. */
  publicQueue: boolean;
  publicMetrics: boolean;
  /** `dashboard:` in baton.yaml: session lifetime, login limits, plain http. */
  dashboard: DashboardSettings;
  /** `http.maxBodyBytes`: the body limit of every route but the webhooks and the workspace callbacks. */
  maxBodyBytes: HttpLimits['maxBodyBytes'];
  /** `http.trustedProxies`: whose X-Forwarded-For names the client (the login limiter). */
  trustedProxies?: HttpLimits['trustedProxies'];
  /** The configured forges' web roots (GITEA_URL, GITHUB_URL, GITLAB_URL), for the links to issues and pull requests. */
  forges?: ForgeWebRoots;
  /** Queues a run asked for through `POST /api/runs`. */
  submitRun?: RunSubmitter;
  /** The deliveries inspector (`/api/deliveries…`); without it those routes answer 404. */
  deliveries?: DeliveryInspector;
  /** Told of every forge delivery that was accepted (2xx): readiness knows a forge is talking to baton. */
  onForgeDelivery?: () => void;
  now: () => number;
  /** Checks a run's claimed success against the forge before it is recorded. */
  checkOutcome?: (run: Run, outcome: RunOutcome) => Promise<RunOutcome>;
  /** The forge gateway (`/gateway/…`): runs reach the forge through it; it bounds its own bodies. */
  gateway?: Hono;
  /** Daily budgets (`/api/budgets`); absent in tests that build the app without them. */
  budgets?: BudgetService;
}

/**
 * The HTTP app: routes over services, with one error envelope (`{ error: { code, message } }`),
 * security headers on every answer, and the credential check (token or dashboard session, and
 * the scope the request needs) as middleware in front of everything that needs it. A new route
 * group is one more `app.route` below (and its auth rule next to the others).
 */
export function createHttpApp(deps: HttpDeps): Hono {
  const app = new Hono();
  app.onError(errorHandler(deps.logger));
  app.notFound(notFound);
  app.use('*', securityHeaders());

  // Credential checks come before any route: every /api/* path except the workspace callbacks,
  // which carry their own per-run token; /webhook/* verifies the forge's signature itself.
  const credentials: Credentials = { tokens: deps.tokens, sessions: deps.sessions };
  const tokenRequired = requireToken(credentials);
  app.use('/api/*', requireToken(credentials, { skip: (c) => isWorkspaceCallback(c.req.path) }));
  if (!deps.publicQueue) app.use('/queue', tokenRequired);
  const countedWebhooks = countWebhooks(deps.metrics, deps.onForgeDelivery);
  app.use('/webhook/gitea*', countedWebhooks);
  app.use('/webhook/github', countedWebhooks);
  app.use('/webhook/gitlab', countedWebhooks);
  // Every other body is bounded, after the credential check. The webhooks and the callbacks
  // bound theirs themselves, after their own checks; the login form has a smaller limit of its own.
  app.use('*', boundBodies(deps.maxBodyBytes));

  app.route(
    '/',
    healthRoutes(deps.readiness, async (c) => (await identify(c, credentials)) !== null),
  );
  app.route('/', queueRoutes(deps.runs, deps.now));
  if (deps.gateway) app.route('/', deps.gateway);
  app.route('/', callbackRoutes(deps));
  app.route('/', deps.webhooks);
  app.route('/', metricsRoutes(deps.metrics, deps.publicMetrics ? undefined : tokenRequired));
  app.route('/', runsRoutes({ engine: deps.engine, runs: deps.runs, forges: deps.forges, now: deps.now, submit: deps.submitRun }));
  app.route('/', conversationRoutes({ runs: deps.runs, now: deps.now }));
  app.route('/', insightsRoutes({ runs: deps.runs, forges: deps.forges, now: deps.now }));
  app.route('/', tokenRoutes(deps.tokens));
  if (deps.budgets) app.route('/', budgetRoutes(deps.budgets, deps.now));
  if (deps.deliveries) app.route('/', deliveriesRoutes(deps.deliveries));
  app.route('/', eventRoutes(deps.events));
  const clientAddress = createClientAddressResolver(deps.trustedProxies ?? []);
  app.route('/', dashboardRoutes({ credentials, settings: deps.dashboard, now: deps.now, clientAddress }));
  return app;
}

function boundBodies(maxBytes: number): MiddlewareHandler {
  const limit = limitBody(maxBytes);
  return async (c, next) => {
    const path = c.req.path;
    if (path.startsWith('/webhook/') || path.startsWith('/gateway/') || isWorkspaceCallback(path) || path === '/login') return next();
    return limit(c, next);
  };
}

/** Counts incoming forge deliveries by how they were answered, and tells of the accepted ones. */
function countWebhooks(metrics: MetricsRegistry, onAccepted?: () => void): MiddlewareHandler {
  const received = metrics.counter('baton_webhook_received_total', 'Incoming forge webhook deliveries by result.');
  return async (c, next) => {
    await next();
    const result = webhookResult(c.res.status);
    received.inc({ result });
    // Only what the ingress accepted (signed, when a secret is set): a forged request must not move /ready.
    if (result === 'accepted' && c.req.path.startsWith('/webhook/gitea')) onAccepted?.();
  };
}

/** 202 accepted (stored in the inbox, its verdict comes later), 4xx refused, 5xx not stored. */
function webhookResult(status: number): string {
  if (status === 202) return 'accepted';
  if (status === 401) return 'unauthorized';
  if (status === 413) return 'too_large';
  return status < 500 ? 'rejected' : 'error';
}
