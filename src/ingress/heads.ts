import type { Kysely } from 'kysely';
import type { Database } from '../store/index.js';

type Db = Kysely<Database>;

const keyOf = (owner: string, repo: string) => `${owner}/${repo}`.toLowerCase();

/**
 * The pull request heads baton has acted on, one row per pull request. Whoever acts on a head
 * first (the inbox worker for a webhook's `opened`/`synchronized`, or for catch-up's) records it
 * in the transaction that enqueues the review, so the other sees it and starts nothing.
 */
export const pullRequestHeads = {
  async seen(db: Db, owner: string, repo: string, number: number): Promise<string | null> {
    const row = await db
      .selectFrom('pull_request_heads')
      .select('head_sha')
      .where('repository', '=', keyOf(owner, repo))
      .where('number', '=', number)
      .executeTakeFirst();
    return row?.head_sha ?? null;
  },
  async remember(db: Db, owner: string, repo: string, number: number, sha: string, at: number): Promise<void> {
    await db
      .insertInto('pull_request_heads')
      .values({ repository: keyOf(owner, repo), number, head_sha: sha, updated_at: at })
      .onConflict((oc) => oc.columns(['repository', 'number']).doUpdateSet({ head_sha: sha, updated_at: at }))
      .execute();
  },
};
