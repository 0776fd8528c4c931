import type { Store } from '../store/index.js';

/** Deliveries older than this are forgotten; Gitea never redelivers that late on its own. */
export const DEFAULT_DELIVERY_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;

export interface IssueRef {
  owner: string;
  repo: string;
  number: number;
}

/** The durable memory the ingress keeps between deliveries (tables from migration 0010-ingress). */
export interface IngressState {
  /**
   * Records a delivery id. Returns false when it was recorded before: the caller must not act on it
   * again. The unique key decides, so two concurrent copies cannot both win.
   */
  claimDelivery(id: string, details: { event: string; repository?: string }): Promise<boolean>;
  /** Forgets a claim whose work failed, so a redelivery of it is acted on. */
  releaseDelivery(id: string): Promise<void>;
  /** Labels last seen on the issue/PR through this route, or null when never seen. */
  labelsSeen(scope: string, issue: IssueRef): Promise<string[] | null>;
  rememberLabels(scope: string, issue: IssueRef, labels: readonly string[]): Promise<void>;
  /** Deletes delivery records older than `olderThanMs`. Returns how many. */
  pruneDeliveries(olderThanMs?: number): Promise<number>;
}

export function createIngressState(store: Pick<Store, 'db'>, now: () => number = Date.now): IngressState {
  const { db } = store;
  const key = (issue: IssueRef) => ({ owner: issue.owner.toLowerCase(), repo: issue.repo.toLowerCase(), number: issue.number });
  return {
    async claimDelivery(id, details) {
      const result = await db
        .insertInto('webhook_deliveries')
        .values({ id, event: details.event, repository: details.repository ?? null, received_at: now() })
        .onConflict((oc) => oc.column('id').doNothing())
        .executeTakeFirst();
      return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
    },
    async releaseDelivery(id) {
      await db.deleteFrom('webhook_deliveries').where('id', '=', id).execute();
    },
    async labelsSeen(scope, issue) {
      const k = key(issue);
      const row = await db
        .selectFrom('webhook_labels')
        .select('labels')
        .where('scope', '=', scope)
        .where('owner', '=', k.owner)
        .where('repo', '=', k.repo)
        .where('number', '=', k.number)
        .executeTakeFirst();
      if (!row) return null;
      try {
        const parsed: unknown = JSON.parse(row.labels);
        return Array.isArray(parsed) ? parsed.filter((l): l is string => typeof l === 'string') : null;
      } catch {
        return null;
      }
    },
    async rememberLabels(scope, issue, labels) {
      const k = key(issue);
      const text = JSON.stringify([...labels]);
      const at = now();
      await db
        .insertInto('webhook_labels')
        .values({ scope, ...k, labels: text, updated_at: at })
        .onConflict((oc) => oc.columns(['scope', 'owner', 'repo', 'number']).doUpdateSet({ labels: text, updated_at: at }))
        .execute();
    },
    async pruneDeliveries(olderThanMs = DEFAULT_DELIVERY_RETENTION_MS) {
      const result = await db
        .deleteFrom('webhook_deliveries')
        .where('received_at', '<', now() - olderThanMs)
        .executeTakeFirst();
      return Number(result.numDeletedRows ?? 0n);
    },
  };
}
