import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Hono } from 'hono';
import { ConfigError, type Config } from '../config/index.js';
import { createForgeAccounts } from '../forge/index.js';
import { createGiteaIngress, pruneDeliveries } from '../ingress/index.js';
import { maintenanceRequests, type Pipeline } from '../pipeline/index.js';
import type { Logger } from '../log/index.js';
import {
  createDispatcher,
  createRunEngine,
  createScheduler,
  createSweeper,
  createTeardownWorker,
  NOTIFY_CHANNEL,
  type FullRunEngine,
  type Run,
  type Schedule,
} from '../runs/index.js';
import { createStore, type Store } from '../store/index.js';
import {
  createCoderProviderFromConfig,
  createLocalProvider,
  reconcile,
  workspaceNameForKey,
  type WorkspaceProvider,
  type WorkspaceSpec,
} from '../workspaces/index.js';
import { createWebhookDelivery, createWebhookHook, WEBHOOK_EVENT_OF, WEBHOOK_KIND } from '../event-webhooks/index.js';
import { createMetricsRegistry, type MetricsRegistry } from '../metrics/index.js';
import {
  createCommentHandler,
  createOutbox,
  createStatusCommentHook,
  PermanentDeliveryError,
  RetryLaterError,
  STATUS_COMMENT_EVENTS,
  type Outbox,
} from '../outbox/index.js';
import { createTokenStore, type TokenStore } from '../tokens/index.js';
import { isWorkspaceCallback, requireToken } from './auth.js';
import { HttpError } from './errors.js';
import { createEventHub, type EventHub } from './event-hub.js';
import { metricsRoutes, registerRunMetrics } from './metrics.js';
import { dashboardRoutes } from './routes-dashboard.js';
import { eventRoutes } from './routes-events.js';
import { healthRoutes, type ReadinessCheck } from './routes-health.js';
import { callbackRoutes } from './routes-callbacks.js';
import { queueRoutes } from './routes-queue.js';
import { runsRoutes } from './routes-runs.js';
import { resolveModuleSettings } from './settings.js';

export interface AppDeps {
  logger: Logger;
  store?: Store;
  provider?: WorkspaceProvider;
  now?: () => number;
  /**
   * Shows the admin token minted on a first start. It goes to the terminal, never to the log.
   * @default writes a notice to stderr
   */
  announceToken?: (token: string) => void;
  /** Outbox tuning (tests shorten retry backoff and polling). */
  outbox?: { backoffBaseMs?: number; backoffMaxMs?: number; pollMs?: number };
  /** Event stream tuning (tests shorten the heartbeat and the poll). */
  events?: { heartbeatMs?: number; pollMs?: number; maxBufferBytes?: number };
}

export interface App {
  readonly hono: Hono;
  readonly engine: FullRunEngine;
  readonly store: Store;
  readonly provider: WorkspaceProvider;
  readonly tokens: TokenStore;
  /** Prometheus registry served at /metrics; other modules add their counters here. */
  readonly metrics: MetricsRegistry;
  readonly events: EventHub;
  /** Durable delivery of side effects; event webhooks today (kind `webhook`). */
  readonly outbox: Outbox;
  /** Resolves once migrations are applied (retrying while the database is unreachable) and workers run. */
  start(): Promise<void>;
  /** Stops claiming, drains in-flight work, closes the store. Safe to call twice. */
  stop(): Promise<void>;
}

/**
 * The one composition root: every collaborator is made here from the config (or taken from
 * `deps`, which is how tests put fakes in), and nothing runs until `start()`.
 */
export function createApp(config: Config, deps: AppDeps): App {
  const { logger } = deps;
  const now = deps.now ?? Date.now;
  const settings = resolveModuleSettings(config);
  if (settings.problems.length > 0) throw new ConfigError(settings.problems);
  const store = deps.store ?? createStore({ url: config.database.url, sqliteSynchronous: config.database.sqliteSynchronous });
  const engine = createRunEngine({ store, queue: config.queue, now, runLog: settings.runLog });
  const provider = deps.provider ?? createDefaultProvider(config, logger, engine);

  const dispatcher = createDispatcher({
    engine,
    store,
    provider,
    logger,
    workspaceName,
    buildSpec: (run, name, callbackToken) => buildWorkspaceSpec(config, run, name, callbackToken),
    leaseMs: config.queue.leaseMs,
    pollMs: config.queue.pollMs,
  });
  const teardown = createTeardownWorker({ store, provider, cleanup: config.cleanup, logger, now });
  engine.subscribe((event) => {
    if (event.toStatus && ['succeeded', 'failed', 'timed_out', 'cancelled', 'dead'].includes(event.toStatus)) teardown.wake();
  });
  const tokens = createTokenStore({ store, now });
  const metrics = createMetricsRegistry();
  const events = createEventHub({ engine, store, logger, forgeUrl: config.gitea.url, now, ...deps.events });

  // Status comments and event webhooks: written to the outbox inside each transition's
  // transaction, delivered by the outbox worker with retries, so Gitea or a receiver being down
  // never blocks or loses a run. Webhook entries are ordered per run and endpoint.
  const accounts = createForgeAccounts(config);
  const outbox = createOutbox({
    store,
    logger,
    pollMs: config.queue.pollMs,
    wakeChannel: NOTIFY_CHANNEL,
    ...deps.outbox,
    handlers: {
      comment: createCommentHandler({ accounts }),
      [WEBHOOK_KIND]: createWebhookDelivery({
        webhooks: config.events.webhooks,
        deliveries: metrics.counter('baton_webhook_deliveries_total', 'Outbound event webhook deliveries by result.'),
        errors: {
          permanent: (message) => new PermanentDeliveryError(message),
          retryLater: (message, delayMs) => new RetryLaterError(message, delayMs),
        },
      }),
    },
  });
  engine.addHook(
    createStatusCommentHook({
      templates: settings.commentTemplates,
      accounts,
      outbox,
      secrets: [config.bots.dev.token, config.bots.review.token, config.gitea.webhookSecret, config.coder.token, config.claude.oauthToken],
    }),
  );
  if (config.events.webhooks.length > 0) engine.addHook(createWebhookHook({ webhooks: config.events.webhooks, enqueue: outbox.enqueue }));
  // Wake the outbox only for events a hook turned into entries: without a forge or event
  // webhooks there is nothing to deliver, and a wake would only make the worker look in vain.
  const commentsOn = Object.keys(accounts).length > 0;
  engine.subscribe((event) => {
    if (
      (commentsOn && (STATUS_COMMENT_EVENTS as readonly string[]).includes(event.type)) ||
      (config.events.webhooks.length > 0 && WEBHOOK_EVENT_OF[event.type])
    ) {
      outbox.wake();
    }
  });
  const stopRunMetrics = registerRunMetrics({
    registry: metrics,
    engine,
    store,
    hub: events,
    now,
    outboxBacklog: async () => (await outbox.counts()).pending,
  });

  const scheduler = createScheduler({ engine, schedules: schedulesFrom(config, settings.pipeline), logger, now });
  const sweeper = createSweeper({
    engine,
    logger,
    staleAfterMs: config.staleWorkspaceMinutes * 60_000,
    sweepMs: config.sweepMinutes * 60_000,
    now,
    onSweep: async () => {
      if (provider.name === 'coder') await reconcileWorkspaces(engine, provider, logger);
      await pruneDeliveries(store, settings.webhooks.deliveryRetentionDays, now);
      await outbox.prune(config.queue.retentionDays * 24 * 60 * 60_000);
    },
  });

  const readiness: ReadinessCheck[] = [
    { name: 'database', check: () => store.ping() },
    {
      name: 'migrations',
      check: async () => {
        const pending = await store.pendingMigrations();
        if (pending.length > 0) throw new Error(`pending: ${pending.join(', ')} (run "baton migrate" or start baton serve)`);
      },
    },
    { name: 'data directory', check: () => checkWritable(config.dataDir) },
  ];
  if (provider.health) {
    readiness.push({
      name: `provider ${provider.name}`,
      check: async () => {
        const { ok, reason } = provider.health?.() ?? { ok: true };
        if (!ok) throw new Error(reason ?? 'unhealthy');
      },
    });
  }

  const hono = new Hono();
  hono.onError((err, c) => {
    if (err instanceof HttpError) return c.json({ error: { code: err.code, message: err.message } }, err.status);
    logger.error({ err, path: c.req.path }, 'request failed');
    return c.json({ error: { code: 'internal', message: 'internal error' } }, 500);
  });
  hono.notFound((c) => c.json({ error: { code: 'not_found', message: `no route for ${c.req.method} ${c.req.path}` } }, 404));
  // Token checks come before any route: every /api/* path except the workspace callbacks, which
  // carry their own per-run token; /webhook/* verifies the forge's signature itself.
  const tokenRequired = requireToken(tokens);
  hono.use('/api/*', requireToken(tokens, { skip: (c) => isWorkspaceCallback(c.req.path) }));
  if (!config.api.publicQueue) hono.use('/queue', tokenRequired);
  hono.route(
    '/',
    healthRoutes(() => readiness),
  );
  hono.route('/', queueRoutes(engine, now));
  hono.route('/', callbackRoutes(engine, logger));
  const received = metrics.counter('baton_webhook_received_total', 'Incoming forge webhook deliveries by result.');
  hono.use('/webhook/gitea*', async (c, next) => {
    await next();
    received.inc({ result: webhookResult(c.res.status) });
  });
  hono.route(
    '/',
    createGiteaIngress({
      engine,
      store,
      pipeline: settings.pipeline,
      webhooks: settings.webhooks,
      secret: config.gitea.webhookSecret,
      permissionOf: accounts.dev ? (owner, repo, user) => accounts.dev!.getUserPermission(owner, repo, user) : undefined,
      logger,
      now,
    }),
  );
  hono.route('/', metricsRoutes(metrics, config.api.publicMetrics ? undefined : tokenRequired));
  hono.route('/', runsRoutes({ engine, store, forgeUrl: config.gitea.url, now }));
  hono.route('/', eventRoutes(events));
  hono.route('/', dashboardRoutes(tokens));

  let stopped = false;
  let starting: Promise<void> | undefined;
  let stopping: Promise<void> | undefined;

  async function migrateWithRetry(): Promise<void> {
    for (let attempt = 1; !stopped; attempt++) {
      try {
        const result = await store.migrate();
        if (result.applied.length) logger.info({ applied: result.applied }, 'migrations applied');
        return;
      } catch (err) {
        const delay = Math.min(30_000, 500 * 2 ** Math.min(attempt, 6));
        logger.error({ err, attempt, retryInMs: delay }, 'database not ready; retrying');
        await new Promise((resolve) => setTimeout(resolve, delay));
      }
    }
  }

  return {
    hono,
    engine,
    store,
    provider,
    tokens,
    metrics,
    events,
    outbox,
    start() {
      starting ??= (async () => {
        fs.mkdirSync(config.dataDir, { recursive: true });
        await migrateWithRetry();
        if (stopped) return;
        const minted = await tokens.bootstrap(config.api.bootstrapToken);
        if (minted) {
          logger.info(
            { name: minted.name, hint: minted.hint, fromEnv: Boolean(config.api.bootstrapToken) },
            'first start: admin API token created',
          );
          if (!config.api.bootstrapToken) (deps.announceToken ?? announceToStderr)(minted.token);
        }
        await events.start();
        await outbox.start();
        await dispatcher.start();
        teardown.start();
        scheduler.start();
        sweeper.start();
        logger.info({ provider: provider.name, store: store.dialect, concurrency: config.queue.concurrency }, 'baton started');
      })();
      return starting;
    },
    stop() {
      stopping ??= (async () => {
        stopped = true;
        await starting?.catch(() => {});
        scheduler.stop();
        stopRunMetrics();
        await events.stop();
        await Promise.all([dispatcher.stop(), sweeper.stop()]);
        await teardown.stop();
        await outbox.stop();
        await provider.close?.();
        await store.close();
      })();
      return stopping;
    },
  };
}

function announceToStderr(token: string): void {
  process.stderr.write(
    `\nbaton: first start, no API tokens yet. This admin token is shown once; store it now:\n\n  ${token}\n\n` +
      'Use it as "Authorization: Bearer <token>", in BATON_TOKEN for the CLI, or to log in to the dashboard.\n' +
      'Mint more with "baton token create --name NAME"; revoke with "baton token revoke NAME".\n\n',
  );
}

/** 202 accepted (queued or ignored with a reason), 200 a repeated delivery, 4xx refused. */
function webhookResult(status: number): string {
  if (status === 202) return 'accepted';
  if (status === 200) return 'duplicate';
  if (status === 401) return 'unauthorized';
  if (status === 413) return 'too_large';
  return status < 500 ? 'rejected' : 'error';
}

/** The `baton` bin of this installation: local workspaces run `baton agent` from it. */
const BATON_BIN = fileURLToPath(new URL('../../bin/baton.js', import.meta.url));

function createDefaultProvider(config: Config, logger: Logger, engine: FullRunEngine): WorkspaceProvider {
  if (config.workspaceProvider === 'coder') {
    return createCoderProviderFromConfig(config, {
      // Workspace names are per run, so only the run that named it can own it.
      isOwnedByLiveRun: async (name) => {
        const run = await engine.findByWorkspace(name);
        return run !== null && ['queued', 'provisioning', 'running'].includes(run.status);
      },
    });
  }
  return createLocalProvider({
    dataDir: config.dataDir,
    command: [process.execPath, BATON_BIN, 'agent'],
    env: {
      ...config.agentEnv,
      ...(config.claude.oauthToken ? { CLAUDE_CODE_OAUTH_TOKEN: config.claude.oauthToken } : {}),
    },
    onError: (message, err) => logger.warn({ err }, message),
  });
}

/**
 * Readable (`develop-acme-app-7-r42`) and deterministic per run, so a re-claim after a crash finds
 * the workspace the first claim made, while a follow-up run never adopts its predecessor's.
 */
function workspaceName(run: Run): string {
  return workspaceNameForKey(`${run.key}-r${run.id}`);
}

function buildWorkspaceSpec(config: Config, run: Run, name: string, callbackToken: string): WorkspaceSpec {
  const account = run.payload.account === 'review' ? config.bots.review : config.bots.dev;
  return {
    name,
    runId: run.id,
    stage: run.stage,
    owner: run.owner,
    repo: run.repo,
    number: run.number ?? undefined,
    cloneUrl: run.payload.cloneUrl,
    deployEnv: run.payload.deployEnv,
    build: run.payload.build === 'heavy' || run.payload.build === 'light' ? run.payload.build : undefined,
    skipPermissions: typeof run.payload.skipPermissions === 'boolean' ? run.payload.skipPermissions : undefined,
    forgeUrl: config.gitea.url,
    forgeToken: account.token,
    callbackUrl: `${config.callbackUrl}/api/runs/${run.id}/complete`,
    callbackToken,
    maxDurationMs: config.staleWorkspaceMinutes * 60_000,
  };
}

function schedulesFrom(config: Config, pipeline: Pipeline): Schedule[] {
  if (config.maintenanceRepos.length === 0) return [];
  return [
    {
      name: 'maintenance',
      cron: config.schedules.maintenance,
      timezone: config.schedules.timezone,
      tasks: () => maintenanceRequests(config.maintenanceRepos, pipeline),
    },
  ];
}

async function checkWritable(dir: string): Promise<void> {
  const probe = path.join(dir, `.ready-${process.pid}`);
  try {
    await fs.promises.writeFile(probe, '');
    await fs.promises.rm(probe, { force: true });
  } catch (err) {
    throw new Error(`${dir} is not writable (${(err as NodeJS.ErrnoException).code ?? err})`);
  }
}

/**
 * Reconcile on start and on every sweep. A provisioning run whose workspace is up needs nothing
 * here: its lease expires, it is re-claimed, and the create adopts the workspace by name.
 */
async function reconcileWorkspaces(engine: FullRunEngine, provider: WorkspaceProvider, logger: Logger): Promise<void> {
  await reconcile({
    provider,
    logger,
    runs: {
      listLive: async () => (await engine.listLive()).map((r) => ({ id: r.id, status: r.status, workspaceName: r.workspaceName })),
      adopt: async () => {},
      failRun: async (runId, reason) => {
        await engine.complete(runId, { status: 'failed', error: reason });
      },
    },
  });
}
