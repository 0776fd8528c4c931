import type { Store } from '../store/index.js';

export interface IssueRef {
  owner: string;
  repo: string;
  number: number;
}

/**
 * The label memory the ingress keeps between deliveries (`webhook_labels`, migration 0010-ingress):
 * Gitea's `label_updated` carries no diff, so "newly added" is computed against it. Which
 * deliveries were already acted on is the inbox's to know (its dedup), not this.
 */
export interface IngressState {
  /** Labels last seen on the issue/PR through this route, or null when never seen. */
  labelsSeen(scope: string, issue: IssueRef): Promise<string[] | null>;
  rememberLabels(scope: string, issue: IssueRef, labels: readonly string[]): Promise<void>;
  /**
   * Records `labels` only when nothing is recorded for the issue yet: catch-up's starting point,
   * which a delivery processed meanwhile overrules.
   */
  seedLabels(scope: string, issue: IssueRef, labels: readonly string[]): Promise<void>;
}

export function createIngressState(store: Pick<Store, 'db'>, now: () => number = Date.now): IngressState {
  const { db } = store;
  const key = (issue: IssueRef) => ({ owner: issue.owner.toLowerCase(), repo: issue.repo.toLowerCase(), number: issue.number });
  return {
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
    async seedLabels(scope, issue, labels) {
      await db
        .insertInto('webhook_labels')
        .values({ scope, ...key(issue), labels: JSON.stringify([...labels]), updated_at: now() })
        .onConflict((oc) => oc.columns(['scope', 'owner', 'repo', 'number']).doNothing())
        .execute();
    },
  };
}
