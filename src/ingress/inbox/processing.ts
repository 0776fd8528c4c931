import type { BackgroundLogger } from '../../background/index.js';
import type { Pipeline } from '../../pipeline/index.js';
import type { Store } from '../../store/index.js';
import { createPermissionCache, type PermissionLookup } from '../permissions.js';
import type { WebhooksConfig } from '../webhooks-config.js';
import type { CommandDeps } from './commands.js';
import { createDeliveryProcessor, type DeliveryProcessorDeps } from './process.js';
import { createInboxStore, type InboxStore } from './store.js';
import { createInboxWorker, type InboxWorker, type InboxWorkerOptions } from './worker.js';

export interface InboxProcessingDeps {
  store: Store;
  engine: DeliveryProcessorDeps['engine'];
  pipeline: Pipeline;
  webhooks: WebhooksConfig;
  /** The forge's permission lookup; required when `webhooks.requireWritePermission` is true. */
  permissionOf?: PermissionLookup;
  /**
   * ChatOps commands (`@baton retry`): their reactions and replies go through this outbox, as
   * `account`. They need `permissionOf`; without either, a command is a plain comment.
   */
  commands?: Omit<CommandDeps, 'now'>;
  logger: InboxWorkerOptions['logger'];
  waitFor?: DeliveryProcessorDeps['waitFor'];
  now?: () => number;
  /** Fallback poll of the worker. @default 5_000 */
  pollMs?: number;
  /** The first retry's wait (tests shorten it). @default 1_000 */
  retryBaseMs?: number;
  /** The inbox store to use. @default one over `store` */
  inbox?: InboxStore;
}

export interface InboxProcessing {
  inbox: InboxStore;
  worker: InboxWorker;
  /**
   * The configuration problem the last permission lookup revealed (the forge answered 401/403),
   * or null once one worked: shown by `/ready`.
   */
  permissionProblem(): string | null;
}

/** The inbox, its processing function and its worker, wired from the `webhooks:` settings. */
export function createInboxProcessing(deps: InboxProcessingDeps): InboxProcessing {
  const { webhooks } = deps;
  const now = deps.now ?? Date.now;
  if (webhooks.requireWritePermission && !deps.permissionOf) {
    throw new Error('webhooks.requireWritePermission is true but no permission lookup (forge client) was given to the inbox');
  }
  const permissionOf =
    webhooks.requireWritePermission && deps.permissionOf
      ? createPermissionCache(deps.permissionOf, webhooks.permissionCacheMs, now)
      : undefined;
  const commandPermission =
    deps.commands && deps.permissionOf
      ? (permissionOf ?? createPermissionCache(deps.permissionOf, webhooks.permissionCacheMs, now))
      : undefined;
  const inbox = deps.inbox ?? createInboxStore(deps.store, now);
  let problem: string | null = null;
  const process = createDeliveryProcessor({
    inbox,
    store: deps.store,
    engine: deps.engine,
    pipeline: deps.pipeline,
    permissionOf,
    ...(deps.commands && commandPermission ? { commands: { ...deps.commands, now, permissionOf: commandPermission } } : {}),
    retentionMs: webhooks.deliveryRetentionDays * 24 * 60 * 60_000,
    onPermissionProblem: (p) => {
      if (p && p !== problem) deps.logger.error({ problem: p }, 'webhook sender permission cannot be checked');
      problem = p;
    },
    ...(deps.waitFor ? { waitFor: deps.waitFor } : {}),
    now,
  });
  const worker = createInboxWorker({
    inbox,
    process,
    store: deps.store,
    logger: deps.logger as BackgroundLogger & { info?(details: object, message: string): void },
    leaseMs: webhooks.leaseMs,
    pollMs: deps.pollMs,
    retry: { baseMs: deps.retryBaseMs ?? 1_000, maxMs: webhooks.retryMaxMs },
    now,
  });
  return { inbox, worker, permissionProblem: () => problem };
}
