import path from 'node:path';
import {
  bool,
  checkSection,
  int,
  invalid,
  list,
  mapping,
  number,
  record,
  secret,
  section,
  text,
  type ResolveContext,
} from '../config-schema/index.js';

/** Defaults of the `webhooks:` section. */
export const WEBHOOK_DEFAULTS = {
  maxBodyBytes: 5 * 1024 * 1024,
  permissionCacheMs: 60_000,
  deliveryRetentionDays: 7,
  leaseMs: 60_000,
  retryMaxMs: 300_000,
  acceptBudgetMs: 2_000,
} as const;

export interface WebhooksConfig {
  /**
   * `owner/repo` patterns (`*` matches within one segment) a delivery must match; empty = any.
   * @example ["acme/*", "tools/app"]
   */
  allow: string[];
  /** Only senders with write (or admin) permission on the repository trigger stages. @default false */
  requireWritePermission: boolean;
  /** How long a permission answer is reused. @default 60_000 */
  permissionCacheMs: number;
  /** Larger bodies are refused with 413 before anything else is done. @default 5 MiB */
  maxBodyBytes: number;
  /**
   * Processed deliveries are kept this long (the deliveries inspector, and the duplicate check of
   * redelivered bodies); unprocessed ones are never pruned. @default 7
   */
  deliveryRetentionDays: number;
  /** A delivery being processed is taken again by another worker after this long (its worker died). @default 60_000 */
  leaseMs: number;
  /** The longest wait between retries of a delivery the forge API could not serve yet (backoff from 1 s). @default 300_000 */
  retryMaxMs: number;
  /** Per-repository secrets, keyed by lower-cased `owner/repo`; each replaces WEBHOOK_SECRET for its repository. */
  repositories: Record<string, { secret?: string }>;
  /**
   * Accept deliveries for repositories no secret applies to, unsigned. Off, such deliveries get
   * 401 and are not kept. A secret that applies is always required. Warned about at every start.
   * @default false
   */
  allowUnsigned: boolean;
  /**
   * How long the inbox insert may take before a delivery goes to the spool instead: well under
   * the forges' 5 s (Gitea, GitHub) and 10 s (GitLab). @default 2_000
   */
  acceptBudgetMs: number;
  /** The replica's spool (src/ingress/spool/); unset only outside `serve` (tests, benches). */
  spoolDir?: string;
}

/** Logged at every start while `webhooks.allowUnsigned` is on. */
export const ALLOW_UNSIGNED_WARNING =
  'webhooks.allowUnsigned is true: deliveries for repositories without a webhook secret are accepted unsigned, so anyone who can reach baton can forge them. Set WEBHOOK_SECRET (or let baton serve generate one) and turn it off.';

/** Logged at every start while `webhooks.requireWritePermission` is off. */
export const WRITE_PERMISSION_OFF_WARNING =
  'webhooks.requireWritePermission is false: anyone who can open an issue or comment on a repository baton serves can start ' +
  "its agent, with the bot's rights. Remove the setting (the default is true: a sender needs write access, as claude-code-action and Copilot ask).";

const OWNER_REPO = /^[^/\s]+\/[^/\s]+$/;
/** An allow pattern: `owner/repo`, or deeper for a GitLab project in a subgroup (`acme/platform/*`). */
const ALLOW_PATTERN = /^[^/\s]+(\/[^/\s]+)+$/;

/**
 * `webhooks:` in baton.yaml:
 *
 * ```yaml
 * webhooks:
 *   allow: ["acme/*", "tools/app"]
 *   requireWritePermission: true
 *   permissionCacheSeconds: 60
 *   maxBodyBytes: 5242880
 *   deliveryRetentionDays: 7
 *   leaseSeconds: 60
 *   retryMaxSeconds: 300
 *   repositories:
 *     acme/app: { secretFile: /run/secrets/acme-app-webhook }
 *   allowUnsigned: false
 *   acceptBudgetSeconds: 2
 *   spoolDir: spool
 * ```
 */
export const webhooksSection = section(
  mapping({
    allow: list(
      text({
        doc: 'an owner/repo pattern',
        check: (pattern) => (ALLOW_PATTERN.test(pattern) ? undefined : invalid('must look like owner/repo or owner/*')),
      }),
      {
        doc: 'owner/repo patterns (* matches within one segment; a GitLab subgroup project is group/subgroup/project or group/subgroup/*) a delivery must match; empty = any',
      },
    ),
    requireWritePermission: bool({
      default: true,
      doc: 'only senders with write permission on the repository trigger stages; false lets anyone who can open an issue steer the agent (warned at every start)',
    }),
    permissionCacheSeconds: number({
      min: 0,
      default: WEBHOOK_DEFAULTS.permissionCacheMs / 1000,
      doc: 'how long a permission answer is reused',
    }),
    maxBodyBytes: int({ min: 1, default: WEBHOOK_DEFAULTS.maxBodyBytes, doc: 'larger bodies are refused with 413 before anything else' }),
    deliveryRetentionDays: number({
      min: 0,
      default: WEBHOOK_DEFAULTS.deliveryRetentionDays,
      doc: 'processed deliveries are kept this long (inspector, duplicate check); unprocessed ones are never pruned',
    }),
    leaseSeconds: number({
      min: 1,
      default: WEBHOOK_DEFAULTS.leaseMs / 1000,
      doc: 'a delivery being processed is taken again after this long when its worker died',
    }),
    retryMaxSeconds: number({
      min: 1,
      default: WEBHOOK_DEFAULTS.retryMaxMs / 1000,
      doc: 'the longest wait between retries of a delivery the forge API could not serve yet',
    }),
    repositories: record(mapping({ secret: secret({ doc: 'this repository’s webhook secret; replaces WEBHOOK_SECRET for it' }) }), {
      doc: 'owner/repo to { secretFile }',
      key: (name) => (OWNER_REPO.test(name) && !name.includes('*') ? undefined : invalid('must be an owner/repo name')),
    }),
    allowUnsigned: bool({
      default: false,
      doc: 'accept unsigned deliveries for repositories no webhook secret applies to (a warning at every start)',
    }),
    acceptBudgetSeconds: number({
      env: 'WEBHOOK_ACCEPT_BUDGET_SECONDS',
      min: 0.05,
      default: WEBHOOK_DEFAULTS.acceptBudgetMs / 1000,
      doc: 'a delivery the database has not stored within this long is written to the spool and answered 202',
    }),
    spoolDir: text({
      env: 'WEBHOOK_SPOOL_DIR',
      doc: 'the spool of deliveries the database could not store in time; relative to the data directory; default DATA_DIR/spool',
    }),
  }),
  (v, ctx: ResolveContext<{ dataDir?: string } | undefined>): WebhooksConfig => {
    if (v.allowUnsigned) ctx.warn(ALLOW_UNSIGNED_WARNING);
    if (!v.requireWritePermission) ctx.warn(WRITE_PERMISSION_OFF_WARNING);
    return {
      allow: (v.allow ?? []).map((pattern) => pattern.toLowerCase()),
      requireWritePermission: v.requireWritePermission,
      permissionCacheMs: Math.round(v.permissionCacheSeconds * 1000),
      maxBodyBytes: v.maxBodyBytes,
      deliveryRetentionDays: v.deliveryRetentionDays,
      leaseMs: Math.round(v.leaseSeconds * 1000),
      retryMaxMs: Math.round(v.retryMaxSeconds * 1000),
      repositories: Object.fromEntries(
        Object.entries(v.repositories).map(([name, entry]) => [
          name.toLowerCase(),
          entry.secret === undefined ? {} : { secret: entry.secret },
        ]),
      ),
      allowUnsigned: v.allowUnsigned,
      acceptBudgetMs: Math.round(v.acceptBudgetSeconds * 1000),
      ...spoolDirOf(v.spoolDir, ctx.deps?.dataDir),
    };
  },
);

function spoolDirOf(configured: string | undefined, dataDir: string | undefined): { spoolDir?: string } {
  if (dataDir === undefined) return configured === undefined ? {} : { spoolDir: path.resolve(configured) };
  return { spoolDir: path.resolve(dataDir, configured ?? 'spool') };
}

/** The `webhooks:` settings from a raw section on its own (tests, benchmarks). */
export function parseWebhooksConfig(raw: unknown): { webhooks: WebhooksConfig; problems: string[] } {
  const { value, problems } = checkSection(webhooksSection, 'webhooks', raw, undefined);
  return { webhooks: value, problems };
}

/** True when `owner/repo` matches one of the patterns (or there are none). Case-insensitive. */
export function isAllowed(allow: readonly string[], owner: string, repo: string): boolean {
  if (allow.length === 0) return true;
  const full = `${owner}/${repo}`.toLowerCase();
  return allow.some((pattern) => globToRegExp(pattern).test(full));
}

function globToRegExp(pattern: string): RegExp {
  const escaped = pattern
    .toLowerCase()
    .split('*')
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('[^/]*');
  return new RegExp(`^${escaped}$`);
}
