import type { Kysely } from 'kysely';
import { forgeRepository, type ForgeName } from '../runs/index.js';
import type { Database } from '../store/index.js';

type Db = Kysely<Database>;

/** GitHub's and GitLab's repositories are named with their forge (`github:acme/app`): another forge's namesake is another repository. */
const keyOf = (owner: string, repo: string, forge?: ForgeName) => forgeRepository(forge, owner, repo).toLowerCase();

/**
 * The pull request heads baton has acted on, one row per pull request. Whoever acts on a head
 * first (the inbox worker for a webhook's `opened`/`synchronized`, or for catch-up's) records it
 * in the transaction that enqueues the review, so the other sees it and starts nothing.
 */
export const pullRequestHeads = {
  async seen(db: Db, owner: string, repo: string, number: number, forge?: ForgeName): Promise<string | null> {
    const row = await db
      .selectFrom('pull_request_heads')
      .select('head_sha')
      .where('repository', '=', keyOf(owner, repo, forge))
      .where('number', '=', number)
      .executeTakeFirst();
    return row?.head_sha ?? null;
  },
  async remember(db: Db, owner: string, repo: string, number: number, sha: string, at: number, forge?: ForgeName): Promise<void> {
    await db
      .insertInto('pull_request_heads')
      .values({ repository: keyOf(owner, repo, forge), number, head_sha: sha, updated_at: at })
      .onConflict((oc) => oc.columns(['repository', 'number']).doUpdateSet({ head_sha: sha, updated_at: at }))
      .execute();
  },
};
