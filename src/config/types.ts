export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
export type WorkspaceProviderName = 'local' | 'coder';

export interface MaintenanceRepo {
  owner: string;
  repo: string;
  cloneUrl: string;
}

export interface BotAccount {
  username: string;
  /** Absent when no forge is configured. */
  token?: string;
}

export interface QueueConfig {
  /** Live workspaces (provisioning + running) across all repositories. */
  concurrency: number;
  /** Live workspaces per repository; 0 = no per-repository limit. */
  perRepositoryConcurrency: number;
  /** Provisioning attempts before a run is `dead`. */
  maxAttempts: number;
  /** First retry delay; doubles per attempt, with jitter. */
  backoffBaseMs: number;
  backoffMaxMs: number;
  /** How long a provisioning claim stays valid without a heartbeat. */
  leaseMs: number;
  /** Fallback poll; wake-ups normally come from signals, this only catches anything missed. */
  pollMs: number;
  /** Finished runs older than this are deleted. */
  retentionDays: number;
}

export interface CleanupConfig {
  concurrency: number;
  maxAttempts: number;
  backoffBaseMs: number;
}

export interface Config {
  port: number;
  host: string;
  logLevel: LogLevel;
  /** Root for the SQLite file, local workspaces and logs. */
  dataDir: string;
  database: { url: string; sqliteSynchronous: 'NORMAL' | 'FULL' };
  workspaceProvider: WorkspaceProviderName;
  /** Base URL at which workspaces reach this server. */
  callbackUrl: string;
  queue: QueueConfig;
  cleanup: CleanupConfig;
  staleWorkspaceMinutes: number;
  /** How often stale runs are timed out and workspaces reconciled. */
  sweepMinutes: number;
  schedules: { timezone: string; maintenance: string };
  maintenanceRepos: MaintenanceRepo[];
  gitea: { url?: string; webhookSecret?: string };
  bots: { dev: BotAccount; review: BotAccount };
  coder: { url?: string; token?: string; templateId?: string };
  claude: { oauthToken?: string };
  api: ApiConfig;
  events: EventsConfig;
  /** Runner settings passed through from baton's environment to local workspaces (BATON_INSTALL_COMMAND, …). */
  agentEnv: Record<string, string>;
  /** Path of the baton.yaml that was read, if any. */
  configFile?: string;
  /** The parsed baton.yaml; sections owned by other modules are validated there. */
  file: Record<string, unknown>;
}

export interface ApiConfig {
  /** `GET /queue` without a token. @default false */
  publicQueue: boolean;
  /** `GET /metrics` without a token. @default false */
  publicMetrics: boolean;
  /** Stored as the `admin` token on first start instead of minting one (`BATON_BOOTSTRAP_TOKEN`). */
  bootstrapToken?: string;
}

export type WebhookEventName =
  'run.queued' | 'run.started' | 'run.progress' | 'run.retrying' | 'run.succeeded' | 'run.failed' | 'run.cancelled' | 'run.timed_out';

export interface EventWebhook {
  url: string;
  /** HMAC-SHA256 key; the receiver verifies `X-Baton-Signature` with it. */
  secret: string;
  events: WebhookEventName[];
}

export interface EventsConfig {
  webhooks: EventWebhook[];
}
