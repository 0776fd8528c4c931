import { createHash } from 'node:crypto';
import { errorMessage } from '../background/index.js';
import type { ForgeClient } from '../forge/index.js';
import { createIngressState, isAllowed, labelMemoryScope, pullRequestHeads, type InboxStore } from '../ingress/index.js';
import type { ForgeName } from '../runs/index.js';
import { parseRepositoryName } from '../repositories/index.js';
import type { Store } from '../store/index.js';
import { issueItem, mayHaveNews, planItem, pullItem, type CatchupItem, type ItemMemory } from './plan.js';
import { CURSOR_ORIGIN, type SyncCursor, type SyncStore } from './store.js';
import { syntheticDelivery } from './synthesize.js';

/**
 * How far before its place each pass starts reading a repository. `since` is whole seconds and
 * inclusive, and an update the forge commits late (its transaction still open while we listed)
 * carries an updated_at just behind the newest we saw: reading a minute back catches both, and
 * what is read twice is found already acted on (label and head memory, the inbox's dedup).
 */
export const OVERLAP_MS = 60_000;

/** What one pass did in one repository (batch work reports, it does not throw halfway). */
export interface RepositoryResult {
  repository: string;
  /** Issues and pull requests the forge listed as updated in the window. */
  read: number;
  /** Events put in the inbox. */
  queued: number;
  /** New-looking facts left alone, with why. */
  skipped: string[];
  /** The pass failed here: the place stays, the next pass reads the same window again. */
  error?: string;
  /** Whether asking again may help (the forge or the database was unreachable). */
  retryable?: boolean;
}

export interface CatchupDeps {
  store: Pick<Store, 'db' | 'transaction'>;
  inbox: Pick<InboxStore, 'insert'>;
  sync: SyncStore;
  /** The dev bot's client: it reads the repositories baton serves. */
  client: ForgeClient;
  /** Configured repositories (`catchup.repositories`). */
  repositories: readonly { owner: string; repo: string }[];
  /** `webhooks.allow`: a repository a webhook of which would be refused is not read either. @default any */
  allow?: readonly string[];
  /**
   * The forge `client` reads (its repositories, label memory and places are its own; `sync` must
   * be made for the same forge). @default 'gitea'
   */
  forge?: ForgeName;
  now?: () => number;
}

/**
 * One catch-up pass: enrols the configured repositories and those seen in deliveries, then reads
 * each for what changed since its place and puts the events nobody acted on into the inbox.
 */
export function createCatchupPass(deps: CatchupDeps) {
  const now = deps.now ?? Date.now;
  const { store, sync, client } = deps;
  // The inbox worker's label memory (one for every endpoint), read and seeded as it keeps it.
  const labelMemory = (db: Store['db']) => createIngressState({ db }, now);
  const forge = deps.forge ?? 'gitea';
  const prefix = forge === 'github' || forge === 'gitlab' ? `${forge}:` : '';

  async function enrol(): Promise<void> {
    // A repository starts at "now" (baton's clock; each pass reads from a little before its
    // place): the first pass reads what changed from here on, never the repository's whole history. Later places are the forge's own
    // times, so a clock that differs between baton and the forge only matters for this first one.
    const start = new Date(now()).toISOString();
    await sync.add(deps.repositories, CURSOR_ORIGIN.config, start);
    const seen = await store.db
      .selectFrom('inbox_deliveries')
      .select('repository')
      .distinct()
      .where('source', '=', 'webhook')
      .where('repository', 'is not', null)
      .execute();
    // A name from a payload becomes part of a forge URL: only names Gitea itself allows. Another
    // forge's deliveries name their forge (`github:acme/app`): only this forge's are read.
    const delivered = seen.flatMap((row) => {
      const name = row.repository ?? '';
      if (prefix ? !name.startsWith(prefix) : name.includes(':')) return [];
      const parsed = parseRepositoryName(name.slice(prefix.length));
      return parsed ? [parsed] : [];
    });
    await sync.add(delivered, CURSOR_ORIGIN.delivery, start);
  }

  async function readRepository(cursor: SyncCursor): Promise<RepositoryResult> {
    const result: RepositoryResult = { repository: cursor.repository, read: 0, queued: 0, skipped: [] };
    // The forge's spelling of the names (a repository seen in deliveries is known lower-cased):
    // events carry it as a webhook would.
    const { owner, name: repo } = await client.getRepository(cursor.owner, cursor.repo);
    const windowStart = Date.parse(cursor.since) - OVERLAP_MS;
    const since = new Date(windowStart).toISOString().replace(/\.\d{3}Z$/, 'Z');
    const items: CatchupItem[] = [
      ...(await client.listIssuesUpdatedSince(owner, repo, since)).map(issueItem),
      ...(await client.listPullRequestsUpdatedSince(owner, repo, since)).map(pullItem),
    ];
    result.read = items.length;
    let newest = cursor.since;
    for (const item of items) {
      if (Date.parse(item.updatedAt) > Date.parse(newest)) newest = item.updatedAt;
      const issue = { owner, repo, number: item.number };
      const memoryScope = labelMemoryScope(forge, item.isPull);
      const memory: ItemMemory = {
        labels: await labelMemory(store.db).labelsSeen(memoryScope, issue),
        head: item.isPull ? await pullRequestHeads.seen(store.db, owner, repo, item.number, forge) : null,
      };
      if (!mayHaveNews(item, memory)) continue;
      const plan = planItem(
        item,
        memory,
        await client.listTimeline(owner, repo, item.number, undefined, item.isPull ? 'pull' : 'issue'),
        windowStart,
      );
      result.skipped.push(...plan.skipped);
      if (plan.events.length === 0) continue;
      await store.transaction(async (trx, scope) => {
        // The labels there before the window, as seen: a delivery processed meanwhile has the last word.
        if (plan.seedLabels) await labelMemory(trx).seedLabels(memoryScope, issue, plan.seedLabels);
        for (const event of plan.events) {
          const delivery = syntheticDelivery(owner, repo, item, event, forge);
          // The same fact makes the same body: one already in the inbox (waiting, or processed
          // without moving the memory) is not stored again by every pass.
          const sha = createHash('sha256').update(delivery.body).digest('hex');
          const stored = await trx.selectFrom('inbox_deliveries').select('id').where('body_sha256', '=', sha).executeTakeFirst();
          if (stored) continue;
          await deps.inbox.insert(delivery, scope);
          result.queued += 1;
        }
      });
    }
    await sync.advance(cursor.repository, newest);
    return result;
  }

  return {
    /** Every repository, each on its own: one failing does not stop the others. */
    async run(): Promise<RepositoryResult[]> {
      await enrol();
      const results: RepositoryResult[] = [];
      for (const cursor of await sync.list()) {
        if (!isAllowed(deps.allow ?? [], cursor.owner, cursor.repo)) {
          results.push({
            repository: cursor.repository,
            read: 0,
            queued: 0,
            skipped: [],
            error: 'not in webhooks.allow',
            retryable: false,
          });
          continue;
        }
        try {
          results.push(await readRepository(cursor));
        } catch (err) {
          const error = errorMessage(err);
          const retryable = (err as { retryable?: unknown }).retryable !== false;
          await sync.failed(cursor.repository, error).catch(() => {});
          results.push({ repository: cursor.repository, read: 0, queued: 0, skipped: [], error, retryable });
        }
      }
      return results;
    },
  };
}

export type CatchupPass = ReturnType<typeof createCatchupPass>;
