import { createHash } from 'node:crypto';
import { errorMessage } from '../background/index.js';
import type { ForgeClient, ForgeRepoComment } from '../forge/index.js';
import {
  createIngressState,
  forgeFacts,
  isAllowed,
  labelMemoryScope,
  pullRequestHeads,
  reviewFact,
  type InboxStore,
} from '../ingress/index.js';
import type { ForgeName } from '../runs/index.js';
import { parseGitLabProjectPath, parseRepositoryName } from '../repositories/index.js';
import type { Store } from '../store/index.js';
import {
  issueItem,
  mayHaveNews,
  planComments,
  planItem,
  planReviews,
  pullItem,
  type CatchupItem,
  type ItemMemory,
  type PlannedEvent,
} from './plan.js';
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
    // A name from a payload becomes part of a forge URL: only names the forge itself allows (on
    // GitLab a namespace with its subgroups, `gitlab:acme/platform/app`). Another forge's
    // deliveries name their forge (`github:acme/app`): only this forge's are read.
    const parse = forge === 'gitlab' ? parseGitLabProjectPath : parseRepositoryName;
    const delivered = seen.flatMap((row) => {
      const name = row.repository ?? '';
      if (prefix ? !name.startsWith(prefix) : name.includes(':')) return [];
      const parsed = parse(name.slice(prefix.length));
      return parsed ? [parsed] : [];
    });
    await sync.add(delivered, CURSOR_ORIGIN.delivery, start);
  }

  /** The comments written in the window, repository-wide where the forge lists them so. */
  async function commentsInWindow(
    owner: string,
    repo: string,
    since: string,
    items: readonly CatchupItem[],
    factWindow: number,
  ): Promise<ForgeRepoComment[]> {
    if (client.listCommentsUpdatedSince) return client.listCommentsUpdatedSince(owner, repo, since);
    // No repository-wide list (GitLab): the notes of each item updated in the window. A new note
    // moves its item's updated_at (GitLab's Note#touch_noteable, at most once a minute:
    // ThrottledTouch::TOUCH_INTERVAL, which the window's overlap covers).
    const comments: ForgeRepoComment[] = [];
    for (const i of items) {
      if (Date.parse(i.updatedAt) < factWindow) continue;
      const notes = await client.listComments(owner, repo, i.number, i.isPull ? 'pull' : 'issue');
      comments.push(...notes.map((c) => ({ ...c, number: i.number, isPull: i.isPull })));
    }
    return comments;
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
    // Openings, comments and reviews are rebuilt from when facts are recorded (src/ingress/facts.ts).
    // The forge keeps whole seconds: an item of the second recording began in counts.
    const recordingSince = Math.floor((await forgeFacts.recordingSince(store.db, now())) / 1000) * 1000;
    const factWindow = Math.max(windowStart, recordingSince);
    const openings = items.filter((i) => !i.isPull && i.state === 'open' && Date.parse(i.createdAt) >= factWindow);
    const openingsSeen = await forgeFacts.seen(
      store.db,
      owner,
      repo,
      openings.map((i) => `opened:${i.number}`),
      forge,
    );
    const queue = async (item: CatchupItem, events: readonly PlannedEvent[], seedLabels?: string[]) => {
      const issue = { owner, repo, number: item.number };
      const memoryScope = labelMemoryScope(forge, item.isPull);
      await store.transaction(async (trx, scope) => {
        // The labels there before the window, as seen: a delivery processed meanwhile has the last word.
        if (seedLabels) await labelMemory(trx).seedLabels(memoryScope, issue, seedLabels);
        for (const event of events) {
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
    };
    let newest = cursor.since;
    for (const item of items) {
      if (Date.parse(item.updatedAt) > Date.parse(newest)) newest = item.updatedAt;
      const issue = { owner, repo, number: item.number };
      const memory: ItemMemory = {
        labels: await labelMemory(store.db).labelsSeen(labelMemoryScope(forge, item.isPull), issue),
        head: item.isPull ? await pullRequestHeads.seen(store.db, owner, repo, item.number, forge) : null,
        openingUnseen: openings.includes(item) && !openingsSeen.has(`opened:${item.number}`),
      };
      if (!mayHaveNews(item, memory)) continue;
      const plan = planItem(
        item,
        memory,
        await client.listTimeline(owner, repo, item.number, undefined, item.isPull ? 'pull' : 'issue'),
        windowStart,
      );
      result.skipped.push(...plan.skipped);
      if (plan.events.length > 0) await queue(item, plan.events, plan.seedLabels);
    }
    // Comments and reviews, after the items' own events (an issue's opening before a comment on it).
    // GitLab numbers merge requests apart from issues: an item is known by its kind and number there.
    const itemKey = (isPull: boolean, number: number) => (forge === 'gitlab' && isPull ? `!${number}` : `#${number}`);
    const byKey = new Map(items.map((i) => [itemKey(i.isPull, i.number), i]));
    const later: { at: number; item: CatchupItem; event: PlannedEvent }[] = [];
    const comments = await commentsInWindow(owner, repo, since, items, factWindow);
    const commentsSeen = await forgeFacts.seen(
      store.db,
      owner,
      repo,
      comments.map((c) => `comment:${c.id}`),
      forge,
    );
    for (const { comment, event } of planComments(comments, commentsSeen, factWindow)) {
      // A new comment bumps its issue's updated_at, so its issue is listed; read it when it is not.
      const key = itemKey(comment.isPull ?? false, comment.number);
      let item = byKey.get(key);
      if (!item) {
        item = issueItem(await client.getIssue(owner, repo, comment.number));
        byKey.set(key, item);
      }
      later.push({ at: Date.parse(comment.createdAt), item, event: { ...event, labels: item.labels } });
    }
    for (const item of items) {
      if (!item.isPull || item.state !== 'open' || Date.parse(item.updatedAt) < factWindow) continue;
      // GitLab's approvals carry no time: its review events say when, and the head each was given
      // on; one whose head the forge cannot say is taken as given on the head the item has now.
      const listed = client.listReviewEvents
        ? await client.listReviewEvents(owner, repo, item.number)
        : await client.listPullReviews(owner, repo, item.number);
      const reviews = listed.map((r) => (r.commitId === '' && item.head ? { ...r, commitId: item.head.sha } : r));
      const factOfReview = (r: (typeof reviews)[number], state: 'approved' | 'rejected' | 'comment') =>
        reviewFact(item.number, r.user?.login ?? '', state, r.commitId, r.body);
      const keys = reviews.flatMap((r) => (r.user ? (['approved', 'rejected', 'comment'] as const).map((st) => factOfReview(r, st)) : []));
      const seen = await forgeFacts.seen(store.db, owner, repo, keys, forge);
      for (const event of planReviews(item, reviews, factOfReview, seen, factWindow)) {
        later.push({ at: Date.parse(event.review!.submittedAt), item, event });
      }
    }
    later.sort((a, b) => a.at - b.at);
    for (const { item, event } of later) await queue(item, [event]);
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
