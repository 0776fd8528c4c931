import { describe, expect, it } from 'vitest';
import { canWrite, createPermissionCache, type Permission } from './permissions.js';

describe('createPermissionCache', () => {
  it('reuses an answer until the TTL passes, per repository and user, case-insensitively', async () => {
    let clock = 0;
    const calls: string[] = [];
    const cached = createPermissionCache(
      async (owner, repo, user) => {
        calls.push(`${owner}/${repo}:${user}`);
        return 'write';
      },
      1_000,
      () => clock,
    );
    await cached('acme', 'app', 'alice');
    await cached('Acme', 'App', 'Alice');
    await cached('acme', 'app', 'bob');
    clock = 999;
    await cached('acme', 'app', 'alice');
    clock = 1_001;
    await cached('acme', 'app', 'alice');
    expect(calls).toEqual(['acme/app:alice', 'acme/app:bob', 'acme/app:alice']);
  });

  it('does not cache a failed lookup', async () => {
    let fail = true;
    const cached = createPermissionCache(async () => {
      if (fail) throw new Error('forge down');
      return 'read' as Permission;
    }, 60_000);
    await expect(cached('acme', 'app', 'alice')).rejects.toThrow('forge down');
    fail = false;
    expect(await cached('acme', 'app', 'alice')).toBe('read');
  });

  it('counts admin and write as write access', () => {
    expect(['admin', 'write', 'read', 'none'].map((p) => canWrite(p as Permission))).toEqual([true, true, false, false]);
  });
});
