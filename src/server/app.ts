import { Hono } from 'hono';
import { errorMessage } from '../background/index.js';
import { createCatchupPass, createCatchupWorker, createSyncStore } from '../catchup/index.js';
import type { Config } from './config-types.js';
import { createWebhookDelivery, WEBHOOK_KIND } from '../event-webhooks/index.js';
import { accountKey, createForgeAccounts, createGitHubAppAuth, ForgeError } from '../forge/index.js';
import { createHttpApp } from '../http/index.js';
import { createEventHub, type EventHub } from '../live-events/index.js';
import {
  createDeliveryInspector,
  createGiteaIngress,
  createGitHubIngress,
  createGitLabIngress,
  createInboxProcessing,
  createSpool,
  createSpoolDrainer,
  SpoolLockError,
  pruneProcessedDeliveries,
} from '../ingress/index.js';
import type { Logger } from '../log/index.js';
import { createMetricsRegistry, type MetricsRegistry } from '../metrics/index.js';
import {
  createCommentHandler,
  createOutbox,
  createReactionHandler,
  createReviewerHandler,
  REVIEWER_KIND,
  type Outbox,
} from '../outbox/index.js';
import { maintenanceRequests, type Pipeline } from '../pipeline/index.js';
import {
  createBudgetService,
  createDispatcher,
  createScheduler,
  createSweeper,
  createTeardownWorker,
  ensureRunsSearch,
  NOTIFY_CHANNEL,
  registerRunMetrics,
  type RunService,
  type RunQueries,
  type Schedule,
} from '../runs/index.js';
import { createStore, type Store } from '../store/index.js';
import { createSessionStore, createTokenStore, type SessionStore, type TokenStore } from '../tokens/index.js';
import type { WorkspaceProvider } from '../workspaces/index.js';
import { checkFileModes } from './file-modes.js';
import { announceFirstToken } from './first-token.js';
import { createLifecycle, StartupError, type Worker } from './lifecycle.js';
import { readinessChecks } from './readiness.js';
import { createForgeGateway } from './forge-gateway.js';
import { createGitHubAppBot } from './github-app.js';
import { createOutcomeCheck } from './outcome-check.js';
import { createRunParts } from './runs.js';
import { createRunSubmission } from './run-submission.js';
import { webhookSecretFor, type AnnounceWebhookSecret } from './webhook-secret.js';
import { buildWorkspaceSpec, createConfiguredProvider, reconcileWorkspaces, workspaceName } from './workspaces.js';

export interface AppDeps {
  logger: Logger;
  store?: Store;
  provider?: WorkspaceProvider;
  now?: () => number;
  /**
   * Hands over the admin token minted on a first start, never through the log.
   * @default the terminal when stderr is one, else a 0600 file in the data directory whose path is logged
   */
  announceToken?: (token: string) => void;
  /**
   * Hands over the webhook secret generated when WEBHOOK_SECRET is not set, never through the log.
   * @default like `announceToken`: the terminal, else the log names the 0600 file that holds it
   */
  announceWebhookSecret?: AnnounceWebhookSecret;
  /** Outbox tuning (tests shorten retry backoff and polling). */
  outbox?: { backoffBaseMs?: number; backoffMaxMs?: number; pollMs?: number };
  /** Event stream tuning (tests shorten the heartbeat and the poll). */
  events?: { heartbeatMs?: number; pollMs?: number; maxBufferBytes?: number };
}

export interface App {
  readonly hono: Hono;
  readonly engine: RunService;
  /** Every read of runs (the engine only changes them). */
  readonly runs: RunQueries;
  readonly store: Store;
  readonly provider: WorkspaceProvider;
  readonly tokens: TokenStore;
  /** Dashboard sessions (login, logout, expiry). */
  readonly sessions: SessionStore;
  /** Prometheus registry served at /metrics; other modules add their counters here. */
  readonly metrics: MetricsRegistry;
  readonly events: EventHub;
  /** Durable delivery of side effects: status comments and event webhooks. */
  readonly outbox: Outbox;
  /**
   * Resolves once migrations are applied (retrying while the database is unreachable) and the
   * workers run; rejects with a `StartupError` when the database refuses baton for good.
   */
  start(): Promise<void>;
  /** Stops at any point (start-up included): workers in reverse order, then the provider and the store. Safe to call twice. */
  stop(): Promise<void>;
}

/**
 * The composition root: every collaborator is made here from the config (or taken from `deps`,
 * which is how tests put fakes in), in dependency order (store → metrics → forge → outbox →
 * engine → workspaces → workers → http), and nothing runs until `start()`.
 */
export function createApp(config: Config, deps: AppDeps): App {
  const { logger } = deps;
  const now = deps.now ?? Date.now;

  // 1. The store.
  const store =
    deps.store ??
    createStore({
      url: config.database.url,
      sqliteSynchronous: config.database.sqliteSynchronous,
      timeouts: config.database.timeouts,
      logger,
    });

  // 2. Metrics, which every later part may count into.
  const metrics = createMetricsRegistry();

  // 3. The forge: one client per bot account (none without GITEA_URL), and the secret its
  // webhooks are signed with (generated into the data directory on a first start without one).
  // A GitHub App's authentication is one per process: the accounts and the forge gateway share
  // its installation tokens; its bot login joins the pipeline's bot users once GitHub names it.
  const githubApp =
    config.github.app && config.github.apiUrl
      ? createGitHubAppAuth({ apiUrl: config.github.apiUrl, appId: config.github.app.id, privateKey: config.github.app.privateKey })
      : undefined;
  const accounts = createForgeAccounts(config, { githubApp });
  const appBot = githubApp ? createGitHubAppBot(githubApp, config.pipeline, logger) : undefined;
  const pipeline = appBot?.pipeline ?? config.pipeline;
  const webhookSecret = webhookSecretFor(config, { logger, announce: deps.announceWebhookSecret });

  // 4. The outbox: status comments and event webhooks are written in each transition's own
  // transaction and delivered with retries, so the forge or a receiver being down never blocks or
  // loses a run. Its worker is woken by the commit that wrote an entry.
  const webhookDeliveries = metrics.counter('baton_webhook_deliveries_total', 'Outbound event webhook deliveries by result.');
  // Created at zero so the series exist before the first delivery.
  for (const result of ['delivered', 'retried', 'failed']) webhookDeliveries.inc({ result }, 0);
  const outbox = createOutbox({
    store,
    logger,
    pollMs: config.queue.pollMs,
    wakeChannel: NOTIFY_CHANNEL,
    ...deps.outbox,
    handlers: {
      comment: createCommentHandler({ accounts }),
      reaction: createReactionHandler({ accounts }),
      [REVIEWER_KIND]: createReviewerHandler({ accounts }),
      [WEBHOOK_KIND]: createWebhookDelivery({
        webhooks: config.events.webhooks,
        deliveries: webhookDeliveries,
      }),
    },
  });

  // 5. The runs: the engine (with the hooks that write outbox entries in its transactions), the
  // reads and the callback-token checks.
  const { engine, runs, callbackTokens } = createRunParts(config, { store, outbox, accounts, webhookSecret, logger, now });
  const tokens = createTokenStore({ store, now });
  const sessions = createSessionStore({
    store,
    now,
    lifetime: { idleMs: config.dashboard.sessionIdleMs, maxAgeMs: config.dashboard.sessionMaxAgeMs },
  });
  const budgets = createBudgetService({ store, config: config.budgets, wake: engine.wake });
  const stopRunMetrics = registerRunMetrics({ registry: metrics, engine, queries: runs, now, budgets });

  // The webhook inbox: the ingress only stores verified deliveries; this worker routes them,
  // checks the sender and enqueues, retrying while the forge API is away.
  const inbox = createInboxProcessing({
    store,
    engine,
    pipeline,
    ...(appBot ? { waitFor: appBot.waitFor } : {}),
    // Without a forge (no bot token) no sender's permission can be read; /ready's forge check
    // fails as soon as a delivery arrives and says what to set.
    webhooks: Object.keys(accounts).length > 0 ? config.webhooks : { ...config.webhooks, requireWritePermission: false },
    // Each forge's own dev bot reads its senders' permission.
    permissionOf:
      Object.keys(accounts).length > 0
        ? (owner, repo, user, forge) => {
            const client = accounts[accountKey(forge, 'dev')];
            if (!client) throw new ForgeError(`no dev bot token is configured for ${forge ?? 'gitea'}`, { kind: 'http', status: 401 });
            return client.getUserPermission(owner, repo, user);
          }
        : undefined,
    // ChatOps answers as the dev bot of the command's forge (`dev`, `github:dev`, `gitlab:dev`),
    // through the outbox, in the verdict's transaction.
    commands: (['gitea', 'github', 'gitlab'] as const).some((forge) => accounts[accountKey(forge, 'dev')])
      ? { engine, runs, outbox, account: 'dev' }
      : undefined,
    logger,
    now,
    pollMs: config.queue.pollMs,
  });

  // The replica's spool: a verified delivery the database cannot store within the accept budget
  // is fsynced here and answered 202; the drainer moves it into the inbox once the database
  // answers. Drained first at start (the first worker), and new deliveries queue behind it.
  const spool = config.webhooks.spoolDir ? createSpool({ dir: config.webhooks.spoolDir, logger, now }) : undefined;
  const spoolDrainer = spool ? createSpoolDrainer({ spool, inbox: inbox.inbox, logger }) : undefined;
  const ingressRefused = metrics.counter(
    'baton_ingress_refused_total',
    'Webhook deliveries answered 503 by this replica: stored neither in the database nor in the spool (lost unless the forge resends).',
  );
  // Shown at 0 from the start, so an alert on any increase has a series to compare with.
  ingressRefused.inc({}, 0);

  // Catch-up from the forge API: what webhooks missed goes into the same inbox (source `sync`).
  // It reads as the dev bot; without a forge there is nothing to read. GitHub's and GitLab's
  // have their own places and read the repositories their own webhooks named.
  const forgeCatchups = (['github', 'gitlab'] as const).flatMap((forge) => {
    const dev = accounts[accountKey(forge, 'dev')];
    if (!config.catchup.enabled || !dev) return [];
    const worker = createCatchupWorker({
      pass: createCatchupPass({
        store,
        inbox: inbox.inbox,
        sync: createSyncStore(store, now, forge),
        client: dev,
        repositories: [],
        allow: config.webhooks.allow,
        forge,
        now,
      }),
      logger,
      intervalMs: config.catchup.intervalMs,
    });
    return [{ name: `catch-up (${forge})`, start: () => worker.start(), stop: () => worker.stop() }];
  });
  const catchup =
    config.catchup.enabled && accounts.dev
      ? createCatchupWorker({
          pass: createCatchupPass({
            store,
            inbox: inbox.inbox,
            sync: createSyncStore(store, now),
            client: accounts.dev,
            repositories: config.catchup.repositories,
            allow: config.webhooks.allow,
            now,
          }),
          logger,
          intervalMs: config.catchup.intervalMs,
        })
      : undefined;

  // 6. Workspaces.
  // Each refusal of a run's egress gate: a line in the run's log (what the operator reads first),
  // the counter, and baton's own log.
  const egressRefused = metrics.counter('baton_egress_refused_total', "Connections runs' egress gates refused.");
  egressRefused.inc({}, 0);
  const provider =
    deps.provider ??
    createConfiguredProvider(config, logger, runs, {
      onRefused: (run, refusal) => {
        egressRefused.inc();
        const target = refusal.path !== undefined ? `http://baton.internal${refusal.path}` : `${refusal.host}:${refusal.port}`;
        logger.warn({ runId: run.runId, stage: run.stage, target, reason: refusal.reason }, 'egress refused');
        const line = `[baton] egress refused: ${refusal.method} ${target}: ${refusal.reason} (widen with egress.allow or egress.stages.${run.stage} in baton.yaml)`;
        void engine.appendProgress(run.runId, { lines: [line] }).catch(() => {});
      },
    });

  // 7. The workers: started in this order, stopped in the reverse one. A new background worker
  // is one more entry here.
  // Links to issues and pull requests go to the configured forges only.
  const forges = { gitea: config.gitea.url, github: config.github.url, gitlab: config.gitlab.url };
  const events = createEventHub({ engine, runs, store, logger, forges, now, ...deps.events });
  const teardown = createTeardownWorker({ store, provider, engine, cleanup: config.cleanup, logger, now });
  const dispatcher = createDispatcher({
    engine,
    runs,
    store,
    provider,
    logger,
    workspaceName,
    buildSpec: (run, name, callbackToken) => buildWorkspaceSpec(config, run, name, callbackToken),
    leaseMs: config.queue.leaseMs,
    pollMs: config.queue.pollMs,
  });
  const scheduler = createScheduler({ engine, schedules: schedulesFrom(config, pipeline), logger, now });
  const sweeper = createSweeper({
    engine,
    logger,
    staleAfterMs: config.staleWorkspaceMinutes * 60_000,
    sweepMs: config.sweepMinutes * 60_000,
    now,
    // Every provider: a local runner that died is found like a Coder workspace that stopped.
    checkWorkspaces: () => reconcileWorkspaces(engine, runs, provider, logger),
    workspaceCheckMs: config.cleanup.workspaceCheckMs,
    onSweep: async () => {
      // A question nobody answered ends its run (a comment says so).
      await engine.expireWaiting(config.limits.replyWaitMs ?? 72 * 3_600_000);
      await pruneProcessedDeliveries(store, config.webhooks.deliveryRetentionDays, now);
      await outbox.prune(config.queue.retentionDays * 24 * 60 * 60_000);
      await sessions.prune();
    },
  });
  const workers: Worker[] = [
    ...(appBot ? [{ name: 'GitHub App', start: appBot.start, stop: appBot.stop }] : []),
    ...(spoolDrainer ? [{ name: 'spool', start: () => spoolDrainer.start(), stop: () => spoolDrainer.stop() }] : []),
    { name: 'outbox', start: () => outbox.start(), stop: () => outbox.stop() },
    { name: 'inbox', start: () => inbox.worker.start(), stop: () => inbox.worker.stop() },
    ...(catchup ? [{ name: 'catch-up', start: () => catchup.start(), stop: () => catchup.stop() }] : []),
    ...forgeCatchups,
    { name: 'teardown', start: () => teardown.start(), stop: () => teardown.stop() },
    { name: 'dispatcher', start: () => dispatcher.start(), stop: () => dispatcher.stop() },
    { name: 'scheduler', start: () => scheduler.start(), stop: () => scheduler.stop() },
    { name: 'sweeper', start: () => sweeper.start(), stop: () => sweeper.stop() },
    // Stopped first: it ends the open event streams, which an HTTP server's close waits for.
    { name: 'event stream', start: () => events.start(), stop: () => events.stop() },
  ];
  const backlog = metrics.gauge('baton_outbox_backlog', 'Outbox messages (forge comments, event webhooks) not yet delivered.');
  const streamClients = metrics.gauge('baton_event_stream_clients', 'Connected /api/events clients on this replica.');
  const inboxBacklog = metrics.gauge('baton_inbox_backlog', 'Stored webhook deliveries not yet processed (pending or being processed).');
  const spoolPending = metrics.gauge(
    'baton_ingress_spool_pending',
    "Webhook deliveries in this replica's spool, waiting for the database.",
  );
  metrics.collect(() => {
    spoolPending.set({}, spool?.pending ?? 0);
  });
  metrics.collect(async () => {
    const inboxCounts = await inbox.inbox.counts();
    inboxBacklog.set({}, inboxCounts.pending + inboxCounts.processing);
    backlog.set({}, (await outbox.counts()).pending);
    streamClients.set({}, events.clientCount);
  });

  // 8. HTTP: routes over the services above.
  const webhookRoutes = new Hono();
  webhookRoutes.route(
    '/',
    createGiteaIngress({
      inbox: inbox.inbox,
      webhooks: config.webhooks,
      secret: webhookSecret,
      logger,
      now,
      spool,
      acceptBudgetMs: config.webhooks.acceptBudgetMs,
      onRefused: () => ingressRefused.inc({}),
    }),
  );
  if (config.github.url) {
    webhookRoutes.route(
      '/',
      // The same spool as Gitea's endpoints: one per replica, whatever forge delivered.
      createGitHubIngress({
        inbox: inbox.inbox,
        webhooks: config.webhooks,
        secret: config.github.webhookSecret,
        logger,
        now,
        spool,
        acceptBudgetMs: config.webhooks.acceptBudgetMs,
        onRefused: () => ingressRefused.inc({}),
      }),
    );
  }
  if (config.gitlab.url) {
    webhookRoutes.route(
      '/',
      // The same spool again: GitLab disables a hook that fails 4 times in a row.
      createGitLabIngress({
        inbox: inbox.inbox,
        webhooks: config.webhooks,
        secret: config.gitlab.webhookSecret,
        logger,
        now,
        spool,
        acceptBudgetMs: config.webhooks.acceptBudgetMs,
        onRefused: () => ingressRefused.inc({}),
      }),
    );
  }
  let forgeDeliverySeen = false;
  const readiness = readinessChecks({
    store,
    dataDir: config.dataDir,
    provider,
    forgeUrl: config.gitea.url,
    forgeDeliverySeen: () => forgeDeliverySeen,
    databaseUrl: config.database.url,
    minFreeSpaceBytes: config.minFreeSpaceBytes,
    permissionProblem: inbox.permissionProblem,
    spoolDir: spool?.dir,
  });
  const hono = createHttpApp({
    logger,
    engine,
    runs,
    callbackTokens,
    tokens,
    sessions,
    metrics,
    events,
    webhooks: webhookRoutes,
    readiness: () => readiness,
    publicQueue: config.api.publicQueue,
    publicMetrics: config.api.publicMetrics,
    dashboard: config.dashboard,
    maxBodyBytes: config.http.maxBodyBytes,
    trustedProxies: config.http.trustedProxies,
    gateway: createForgeGateway(config, { callbackTokens, engine, logger, githubApp }),
    forges,
    submitRun: createRunSubmission(config, engine, logger, store),
    checkOutcome: createOutcomeCheck({ pipeline, accounts, logger }),
    budgets,
    // The inbox store the worker listens on: a replay it stores wakes that worker at once.
    deliveries: createDeliveryInspector({ inbox: inbox.inbox, store, spool }),
    onForgeDelivery: () => {
      if (!forgeDeliverySeen && !config.gitea.url)
        logger.warn('a forge webhook arrived but GITEA_URL is not set: /ready now fails (check "forge")');
      forgeDeliverySeen = true;
    },
    now,
  });

  const lifecycle = createLifecycle({
    logger,
    store,
    dataDir: config.dataDir,
    async claim() {
      // The spool's slot, before the database is asked for anything: a delivery that arrives
      // during the migrations' wait for it goes there. A spool that cannot be locked could be
      // shared with another process unknowingly: that stops the start.
      await spool?.open().catch((err: unknown) => {
        if (!(err instanceof SpoolLockError)) {
          // A disk full or a directory it may not write: the spool tries again at each delivery
          // and drain pass, and /ready/ingress says so meanwhile.
          logger.error({ dir: spool.root, err: errorMessage(err) }, 'the webhook spool cannot be opened yet');
          return;
        }
        throw new StartupError(
          `cannot own a slot of the webhook spool in ${spool.root}: ${err.message}. Put webhooks.spoolDir on a file system with file locks (a local disk, NFSv4, CephFS)`,
          'ESPOOLLOCK',
          { cause: err },
        );
      });
    },
    async prepare() {
      // After migrations, so the database files exist; a warning at every start until fixed.
      for (const warning of checkFileModes({ dataDir: config.dataDir, databaseUrl: config.database.url })) logger.warn(warning);
      const search = await ensureRunsSearch(store);
      if (search) logger.warn(search);
      const minted = await tokens.bootstrap(config.api.bootstrapToken);
      if (!minted) return;
      // Nothing of the token itself, not even its first characters: a supplied one is the
      // operator's secret, and a minted one is handed over below, outside the log.
      logger.info(
        { name: minted.name, scope: minted.scope, fromEnv: Boolean(config.api.bootstrapToken) },
        'first start: admin API token created',
      );
      if (config.api.bootstrapToken) return;
      if (deps.announceToken) deps.announceToken(minted.token);
      else announceFirstToken(minted.token, { dataDir: config.dataDir, logger });
    },
    workers,
    closers: [
      { name: 'run metrics', close: stopRunMetrics },
      // After the workers (the drainer) and the HTTP server: no append comes after this.
      ...(spool ? [{ name: 'spool', close: () => spool.close() }] : []),
      { name: `provider ${provider.name}`, close: () => provider.close?.() },
      { name: 'store', close: () => store.close() },
    ],
    startedDetails: { provider: provider.name, store: store.dialect, concurrency: config.queue.concurrency },
  });

  return { hono, engine, runs, store, provider, tokens, sessions, metrics, events, outbox, start: lifecycle.start, stop: lifecycle.stop };
}

function schedulesFrom(config: Config, pipeline: Pipeline): Schedule[] {
  if (config.maintenance.repos.length === 0) return [];
  return [
    {
      name: 'maintenance',
      cron: config.schedules.maintenance,
      timezone: config.schedules.timezone,
      tasks: () => maintenanceRequests(config.maintenance.repos, pipeline),
    },
  ];
}
