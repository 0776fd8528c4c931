import { show } from '../config/index.js';

/** Defaults of the `webhooks:` section. */
export const WEBHOOK_DEFAULTS = {
  maxBodyBytes: 5 * 1024 * 1024,
  permissionCacheMs: 60_000,
  deliveryRetentionDays: 7,
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
  /** Delivery ids are remembered this long for dedup. @default 7 */
  deliveryRetentionDays: number;
  /** Per-repository secrets, keyed by lower-cased `owner/repo`; each replaces WEBHOOK_SECRET for its repository. */
  repositories: Record<string, { secret?: string }>;
}

const KEYS = ['allow', 'requireWritePermission', 'permissionCacheSeconds', 'maxBodyBytes', 'deliveryRetentionDays', 'repositories'];

/**
 * Reads the `webhooks:` section of baton.yaml.
 *
 * ```yaml
 * webhooks:
 *   allow: ["acme/*", "tools/app"]
 *   requireWritePermission: true
 *   permissionCacheSeconds: 60
 *   maxBodyBytes: 5242880
 *   deliveryRetentionDays: 7
 *   repositories:
 *     acme/app: { secret: "…" }
 * ```
 */
export function parseWebhooksConfig(section: unknown): { webhooks: WebhooksConfig; problems: string[] } {
  const problems: string[] = [];
  const webhooks: WebhooksConfig = {
    allow: [],
    requireWritePermission: false,
    permissionCacheMs: WEBHOOK_DEFAULTS.permissionCacheMs,
    maxBodyBytes: WEBHOOK_DEFAULTS.maxBodyBytes,
    deliveryRetentionDays: WEBHOOK_DEFAULTS.deliveryRetentionDays,
    repositories: {},
  };
  if (section === undefined || section === null) return { webhooks, problems };
  if (typeof section !== 'object' || Array.isArray(section)) {
    problems.push(`webhooks must be a mapping, got ${show(section)}`);
    return { webhooks, problems };
  }
  const s = section as Record<string, unknown>;
  for (const key of Object.keys(s)) {
    if (!KEYS.includes(key)) problems.push(`webhooks.${key} is not a known key (known: ${KEYS.join(', ')})`);
  }

  if (s.allow !== undefined && s.allow !== null) {
    const list = typeof s.allow === 'string' ? s.allow.split(',') : s.allow;
    if (!Array.isArray(list)) problems.push(`webhooks.allow must be a list of "owner/repo" patterns, got ${show(s.allow)}`);
    else {
      list.forEach((item, i) => {
        const text = typeof item === 'string' ? item.trim() : '';
        if (!/^[^/\s]+\/[^/\s]+$/.test(text)) {
          problems.push(`webhooks.allow[${i}] must look like owner/repo or owner/* , got ${show(item)}`);
        } else webhooks.allow.push(text.toLowerCase());
      });
    }
  }
  if (s.requireWritePermission !== undefined) {
    if (typeof s.requireWritePermission === 'boolean') webhooks.requireWritePermission = s.requireWritePermission;
    else problems.push(`webhooks.requireWritePermission must be true or false, got ${show(s.requireWritePermission)}`);
  }
  const number = (key: string, min: number): number | undefined => {
    const raw = s[key];
    if (raw === undefined) return undefined;
    if (typeof raw !== 'number' || !Number.isFinite(raw) || raw < min) {
      problems.push(`webhooks.${key} must be a number >= ${min}, got ${show(raw)}`);
      return undefined;
    }
    return raw;
  };
  const cache = number('permissionCacheSeconds', 0);
  if (cache !== undefined) webhooks.permissionCacheMs = Math.round(cache * 1000);
  const maxBody = number('maxBodyBytes', 1);
  if (maxBody !== undefined) webhooks.maxBodyBytes = Math.floor(maxBody);
  const retention = number('deliveryRetentionDays', 0);
  if (retention !== undefined) webhooks.deliveryRetentionDays = retention;

  if (s.repositories !== undefined && s.repositories !== null) {
    if (typeof s.repositories !== 'object' || Array.isArray(s.repositories)) {
      problems.push(`webhooks.repositories must be a mapping of "owner/repo" to { secret }, got ${show(s.repositories)}`);
    } else {
      for (const [name, value] of Object.entries(s.repositories)) {
        const key = `webhooks.repositories["${name}"]`;
        if (!/^[^/\s*]+\/[^/\s*]+$/.test(name)) {
          problems.push(`${key}: the key must be an owner/repo name, got ${show(name)}`);
          continue;
        }
        if (!value || typeof value !== 'object' || Array.isArray(value)) {
          problems.push(`${key} must be a mapping like { secret: "…" }`);
          continue;
        }
        const entry = value as Record<string, unknown>;
        for (const k of Object.keys(entry)) if (k !== 'secret') problems.push(`${key}.${k} is not a known key (known: secret)`);
        // Never echo the value: it is a secret.
        if (entry.secret !== undefined && (typeof entry.secret !== 'string' || entry.secret === '')) {
          problems.push(`${key}.secret must be a non-empty string`);
          continue;
        }
        webhooks.repositories[name.toLowerCase()] = entry.secret === undefined ? {} : { secret: entry.secret as string };
      }
    }
  }
  return { webhooks, problems };
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
