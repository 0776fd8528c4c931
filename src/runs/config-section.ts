import { checkSection, int, mapping, number, section } from '../config-schema/index.js';
import { DEFAULT_RUN_LOG_MAX_BYTES, MIN_RUN_LOG_MAX_BYTES, type RunLogLimits } from './run-log.js';

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

const ms = (seconds: number) => Math.round(seconds * 1000);

/** `queue:` in baton.yaml: how many runs at once, retries and leases. */
export const queueSection = section(
  mapping({
    concurrency: int({ env: 'QUEUE_CONCURRENCY', min: 1, default: 2, doc: 'live workspaces (provisioning + running) at once' }),
    perRepository: int({
      env: 'QUEUE_PER_REPOSITORY_CONCURRENCY',
      min: 0,
      default: 0,
      doc: 'live workspaces per repository; 0 = no limit',
    }),
    maxAttempts: int({ min: 1, default: 3, doc: 'provisioning attempts before a run is dead' }),
    backoffBaseSeconds: number({ min: 0, default: 5, doc: 'first retry delay; doubles per attempt, with jitter' }),
    backoffMaxSeconds: number({ min: 0, default: 600, doc: 'longest retry delay' }),
    leaseSeconds: number({ min: 1, default: 60, doc: 'a provisioning claim not heartbeated for this long goes back to the queue' }),
    pollSeconds: number({ min: 0.01, default: 5, doc: 'fallback poll; new work wakes the dispatcher at once' }),
    retentionDays: number({ min: 0, default: 30, doc: 'finished runs older than this are deleted' }),
  }),
  (v): QueueConfig => ({
    concurrency: v.concurrency,
    perRepositoryConcurrency: v.perRepository,
    maxAttempts: v.maxAttempts,
    backoffBaseMs: ms(v.backoffBaseSeconds),
    backoffMaxMs: ms(v.backoffMaxSeconds),
    leaseMs: ms(v.leaseSeconds),
    pollMs: ms(v.pollSeconds),
    retentionDays: v.retentionDays,
  }),
);

/** `cleanup:` in baton.yaml: workspace teardowns. */
export const cleanupSection = section(
  mapping({
    concurrency: int({ env: 'CLEANUP_CONCURRENCY', min: 1, default: 5, doc: 'workspace teardowns at once' }),
    maxAttempts: int({ min: 1, default: 5, doc: 'teardown attempts' }),
    backoffBaseSeconds: number({ min: 0, default: 10, doc: 'first teardown retry delay' }),
    leaseSeconds: number({
      min: 1,
      default: 30,
      doc: 'lease on a teardown in progress, renewed while it runs; a crashed replica delays the cleanup this long',
    }),
    workspaceCheckSeconds: number({
      env: 'WORKSPACE_CHECK_SECONDS',
      min: 0.05,
      default: 15,
      doc: 'how often workspaces are reconciled with runs (at start too): a run whose runner or workspace is gone fails, and frees its slot',
    }),
  }),
  (v): CleanupConfig => ({
    concurrency: v.concurrency,
    maxAttempts: v.maxAttempts,
    backoffBaseMs: ms(v.backoffBaseSeconds),
    leaseMs: ms(v.leaseSeconds),
    workspaceCheckMs: ms(v.workspaceCheckSeconds),
  }),
);

/** `runLog:` in baton.yaml: how much of each run's log the database keeps. */
export const runLogSection = section(
  mapping({
    maxBytes: int({
      min: MIN_RUN_LOG_MAX_BYTES,
      default: DEFAULT_RUN_LOG_MAX_BYTES,
      doc: 'bytes of log kept per run in the database: the first and the last half, a marker for what was cut between',
    }),
  }),
  (v): RunLogLimits => ({ maxBytes: v.maxBytes }),
);

/** The queue settings with nothing configured, for code that builds a run engine on its own (tests, benchmarks). */
export function defaultQueueConfig(): QueueConfig {
  return checkSection(queueSection, 'queue', undefined, undefined).value;
}

/** For callers that spread the defaults: `{ ...DEFAULTS.queue, concurrency: 4 }`. */
export const DEFAULTS = {
  get queue(): QueueConfig {
    return defaultQueueConfig();
  },
};
