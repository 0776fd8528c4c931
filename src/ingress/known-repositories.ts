import type { Kysely } from 'kysely';
import { forgeRepository, type ForgeName } from '../runs/index.js';
import type { Database, TransactionScope } from '../store/index.js';

/**
 * Repositories seen in a signed delivery (migration 0095-known-repositories): one of the ways a
 * repository becomes one baton knows, for manual submissions. Written in the accept path's own
 * transaction, once per repository and process (a set remembers what was committed).
 */
export function createKnownRepositories(now: () => number = Date.now) {
  const recorded = new Set<string>();
  return {
    async record(scope: TransactionScope, repository: string): Promise<void> {
      const key = repository.toLowerCase();
      if (recorded.has(key)) return;
      await scope.trx
        .insertInto('known_repositories')
        .values({ repository: key, first_seen_at: now() })
        .onConflict((oc) => oc.column('repository').doNothing())
        .execute();
      scope.afterCommit(() => recorded.add(key));
    },
  };
}

/** Whether a signed delivery of `forge` (Gitea's when absent) ever named `owner/repo`. */
export async function seenInSignedDelivery(db: Kysely<Database>, owner: string, repo: string, forge?: ForgeName): Promise<boolean> {
  const row = await db
    .selectFrom('known_repositories')
    .select('repository')
    .where('repository', '=', forgeRepository(forge, owner, repo).toLowerCase())
    .executeTakeFirst();
  return row !== undefined;
}
