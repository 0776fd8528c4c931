import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { ForgeEvent } from '../pipeline/index.js';
import { forgeRepository, type ForgeName } from '../runs/index.js';
import type { Database } from '../store/index.js';

type Db = Kysely<Database>;

/** The row saying from when facts are recorded (migration 0090-forge-facts). */
const MARKER = { repository: '', fact: 'recording-since' } as const;

/**
 * The key of a review fact. Gitea's review webhook carries no review id (reference/gitea/WEBHOOKS.md
 * §4: only `type` and `content`), so a review is known by what both the webhook and the API say of
 * it: the pull request, the reviewer, the verdict, the head it was given on (the webhook's
 * `pull_request.head.sha`, the API's `commit_id`) and the body. Two reviews alike in all of these
 * are one fact (a second identical "LGTM" on the same head starts nothing more).
 */
export function reviewFact(
  number: number,
  reviewer: string,
  state: 'approved' | 'rejected' | 'comment',
  headSha: string,
  body: string,
): string {
  const hash = createHash('sha256').update(body).digest('hex').slice(0, 16);
  return `review:${number}:${reviewer.toLowerCase()}:${state}:${headSha}:${hash}`;
}

/**
 * The fact an event is, when catch-up can also deliver it (so the two must have one effect):
 * an issue opened, a comment created, a review submitted. Pull request openings and pushes are
 * known by their head (heads.ts), label changes by the label memory (state.ts).
 */
export function factOf(event: ForgeEvent): string | undefined {
  if (event.number === undefined) return undefined;
  if (event.kind === 'issue_opened') return `opened:${event.number}`;
  if ((event.kind === 'issue_comment' || event.kind === 'pr_comment') && event.action === 'created' && event.comment?.id !== undefined)
    return `comment:${event.comment.id}`;
  if (event.kind === 'review' && event.review)
    return reviewFact(event.number, event.sender, event.review.state, event.headSha ?? '', event.review.body);
  return undefined;
}

const keyOf = (owner: string, repo: string, forge?: ForgeName) => forgeRepository(forge, owner, repo).toLowerCase();

/**
 * The forge facts baton has acted on (an issue opened, a comment, a review), one row per fact,
 * written in the transaction of the verdict of the first delivery that carried it: a webhook's, or
 * catch-up's from the forge API. The other finds it and has no effect.
 */
export const forgeFacts = {
  /** Which of `facts` are recorded. */
  async seen(db: Db, owner: string, repo: string, facts: readonly string[], forge?: ForgeName): Promise<Set<string>> {
    if (facts.length === 0) return new Set();
    const found = new Set<string>();
    // In slices: SQLite takes a bounded number of parameters.
    for (let i = 0; i < facts.length; i += 500) {
      const rows = await db
        .selectFrom('forge_facts')
        .select('fact')
        .where('repository', '=', keyOf(owner, repo, forge))
        .where('fact', 'in', facts.slice(i, i + 500))
        .execute();
      for (const row of rows) found.add(row.fact);
    }
    return found;
  },

  /** Records the fact; false when it was recorded already (by another delivery, maybe at this moment). */
  async record(db: Db, owner: string, repo: string, fact: string, deliveryId: number, at: number, forge?: ForgeName): Promise<boolean> {
    const result = await db
      .insertInto('forge_facts')
      .values({ repository: keyOf(owner, repo, forge), fact, delivery_id: deliveryId, created_at: at })
      .onConflict((oc) => oc.columns(['repository', 'fact']).doNothing())
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
  },

  /**
   * Since when facts are recorded (ms), set by the first call: catch-up rebuilds openings,
   * comments and reviews only from then on, as older ones were handled by a version that kept no
   * record of them.
   */
  async recordingSince(db: Db, now: number): Promise<number> {
    await db
      .insertInto('forge_facts')
      .values({ ...MARKER, delivery_id: null, created_at: now })
      .onConflict((oc) => oc.columns(['repository', 'fact']).doNothing())
      .execute();
    const row = await db
      .selectFrom('forge_facts')
      .select('created_at')
      .where('repository', '=', MARKER.repository)
      .where('fact', '=', MARKER.fact)
      .executeTakeFirstOrThrow();
    return Number(row.created_at);
  },

  /** Deletes facts older than the retention (the deliveries' own); the marker stays. Returns how many. */
  async prune(db: Db, before: number): Promise<number> {
    const result = await db
      .deleteFrom('forge_facts')
      .where('created_at', '<', before)
      .where('repository', '<>', MARKER.repository)
      .executeTakeFirst();
    return Number(result.numDeletedRows ?? 0n);
  },
};
