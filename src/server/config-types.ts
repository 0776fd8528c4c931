import type { DepsOf, ResolvedOf } from '../config-schema/index.js';
import type { SECTIONS } from './config-sections.js';

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
  /** Lease on a teardown job, renewed while it runs: how long a crashed replica delays its cleanup. */
  leaseMs: number;
  /** How often workspaces are reconciled with runs (a dead runner fails its run). */
  workspaceCheckMs: number;
}

/** The top-level settings config/ owns (see ./root-section.ts), resolved. */
export interface RootSettings {
  port: number;
  host: string;
  logLevel: LogLevel;
  /** Absolute; root for the default SQLite file, local workspaces and logs. */
  dataDir: string;
  /** `/ready` fails while the data directory's or a SQLite database's filesystem has less free space; 0 = no check. */
  minFreeSpaceBytes: number;
  /** Given, or inferred: `coder` when CODER_URL and CODER_TOKEN are set, else `local`. */
  workspaceProvider: WorkspaceProviderName;
  /** Base URL at which workspaces reach this server. */
  callbackUrl: string;
  /** Base URL at which the forge and people reach this server (webhooks, links); absent when not set. */
  publicUrl?: string;
  staleWorkspaceMinutes: number;
  /** How often stale runs are timed out and workspaces reconciled. */
  sweepMinutes: number;
}

type Sections = typeof SECTIONS;

/**
 * The one resolved, frozen configuration: the root settings plus every section of ./sections.ts
 * as its module resolved it (`config.queue`, `config.pipeline`, `config.coder`, …).
 */
export type Config = Readonly<
  RootSettings & { [K in keyof Sections]: ResolvedOf<Sections[K]> } & {
    /** Runner settings passed through from baton's environment to local workspaces (BATON_INSTALL_COMMAND, …). */
    agentEnv: Record<string, string>;
    /** Path of the baton.yaml that was read, if any. */
    configFile?: string;
  }
>;

/**
 * Compile-time check that the configuration gives each section what its resolve asks for
 * (`deps`): a section that needs something the config does not have fails to type-check here.
 */
type DepsMet = { [K in keyof Sections]: Config extends DepsOf<Sections[K]> ? true : false }[keyof Sections];
type MustBeTrue<T extends true> = T;
export type SectionDepsAreMet = MustBeTrue<false extends DepsMet ? false : true>;

export interface ApiConfig {
  /** `GET /queue` without a token. @default false */
  publicQueue: boolean;
  /** `GET /metrics` without a token. @default false */
  publicMetrics: boolean;
  /** Stored as the `admin` token on first start instead of minting one (`BATON_BOOTSTRAP_TOKEN`). */
  bootstrapToken?: string;
}

export type WebhookEventName =
  | 'run.queued'
  | 'run.held'
  | 'run.started'
  | 'run.progress'
  | 'run.retrying'
  | 'run.succeeded'
  | 'run.failed'
  | 'run.cancelled'
  | 'run.timed_out';

export interface EventWebhook {
  url: string;
  /** HMAC-SHA256 key; the receiver verifies `X-Baton-Signature` with it. */
  secret: string;
  events: WebhookEventName[];
}

export interface EventsConfig {
  webhooks: EventWebhook[];
}
