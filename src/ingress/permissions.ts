import type { ForgeName } from '../runs/index.js';

export type Permission = 'admin' | 'write' | 'read' | 'none';

/** Asks the forge what a user may do on a repository (the forge client provides it). `forge` defaults to Gitea. */
export type PermissionLookup = (owner: string, repo: string, user: string, forge?: ForgeName) => Promise<Permission>;

const MAX_ENTRIES = 1000;

/**
 * Wraps a lookup with a TTL cache: a busy issue sends many webhooks from the same people, and each
 * lookup is a forge API call. Failed lookups are not cached.
 */
export function createPermissionCache(lookup: PermissionLookup, ttlMs: number, now: () => number = Date.now): PermissionLookup {
  const entries = new Map<string, { value: Permission; expires: number }>();
  return async (owner, repo, user, forge) => {
    const key = `${forge ?? 'gitea'}:${owner}/${repo}\n${user}`.toLowerCase();
    const hit = entries.get(key);
    if (hit && hit.expires > now()) return hit.value;
    const value = await lookup(owner, repo, user, forge);
    if (ttlMs > 0) {
      entries.delete(key);
      if (entries.size >= MAX_ENTRIES) entries.delete(entries.keys().next().value as string);
      entries.set(key, { value, expires: now() + ttlMs });
    }
    return value;
  };
}

export function canWrite(permission: Permission): boolean {
  return permission === 'admin' || permission === 'write';
}
