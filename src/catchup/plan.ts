import type { ForgeIssue, ForgePullRequest, ForgeRepoComment, ForgeReview, ForgeTimelineEvent } from '../forge/index.js';

/**
 * What catch-up decides for one issue or pull request, from its state on the forge now, baton's
 * memory of it, and its timeline. Pure: no I/O.
 *
 * The facts catch-up looks for are the ones a lost webhook would have carried:
 * - a label newly present against the label memory (Gitea's `label_updated`), one event per label
 *   in the order they were added, each sent by whoever added it (the timeline says who): a label a
 *   bot account added starts nothing, as its webhook would not have;
 * - a pull request opened while baton was not listening (`opened`, sent by its author);
 * - a pull request head baton has not acted on (`synchronized`, sent by whoever pushed it);
 * - an issue opened that baton has not acted on (`issues` `opened`, sent by its author, with the
 *   labels its author gave it; labels others added follow as their own events);
 * - a comment created (`issue_comment` `created`, sent by its author: a ChatOps command is a
 *   comment, so a lost `@baton retry` is rebuilt too, and taken once: see commands.ts);
 * - a review submitted (`pull_request_review_{approved,rejected,comment}` `reviewed`, sent by
 *   the reviewer). A review comment is part of its review: Gitea sends one webhook per submitted
 *   review, carrying its body only (reference/gitea/WEBHOOKS.md §4), and a single code comment
 *   is a submitted `COMMENT` review.
 *
 * Openings, comments and reviews are known by their fact (src/ingress/facts.ts), recorded when a
 * delivery of them is processed: one already recorded is not rebuilt.
 *
 * "Newly present" on an issue baton has never seen (no label memory) means added inside the
 * catch-up window: labels added before it were there before baton looked, and start nothing.
 */

/** An issue or pull request as catch-up compares it. */
export interface CatchupItem {
  number: number;
  isPull: boolean;
  state: 'open' | 'closed';
  merged: boolean;
  title: string;
  htmlUrl: string;
  author: string;
  labels: string[];
  createdAt: string;
  updatedAt: string;
  /** Pull requests only. */
  head?: { ref: string; sha: string };
}

export interface ItemMemory {
  /** Labels baton last saw on it; null when never. */
  labels: readonly string[] | null;
  /** The pull request head baton last acted on; null when none. */
  head: string | null;
  /**
   * An issue opened inside the window (and since facts are recorded) whose opening baton has not
   * acted on: catch-up delivers it. @default false
   */
  openingUnseen?: boolean;
}

/** One event to put in the inbox, shaped as the Gitea webhook that would have said it. */
export interface PlannedEvent {
  kind: 'labels' | 'opened' | 'synchronized' | 'comment' | 'review';
  sender: string;
  /** The labels the event carries (the item's labels as they were after this change). */
  labels: string[];
  /** The timeline entry, comment or review the fact comes from, when there is one (it makes the event unique). */
  entryId?: number;
  /** `comment`: the comment created. */
  comment?: ForgeRepoComment;
  /** `review`: the verdict, its body and the head it was given on. */
  review?: { state: 'approved' | 'rejected' | 'comment'; body: string; commitId: string; submittedAt: string };
}

export interface ItemPlan {
  events: PlannedEvent[];
  /**
   * Labels to record as already seen before the events are processed (only when there was no
   * memory): the ones present before the window, which must not count as new.
   */
  seedLabels?: string[];
  /** Why something that looked new was left alone (no one to attribute it to). */
  skipped: string[];
}

export function issueItem(issue: ForgeIssue): CatchupItem {
  return {
    number: issue.number,
    isPull: issue.isPullRequest,
    state: issue.state,
    merged: false,
    title: issue.title,
    htmlUrl: issue.htmlUrl,
    author: issue.user.login,
    labels: issue.labels.map((l) => l.name),
    createdAt: issue.createdAt,
    updatedAt: issue.updatedAt,
  };
}

export function pullItem(pr: ForgePullRequest): CatchupItem {
  return {
    number: pr.number,
    isPull: true,
    state: pr.state,
    merged: pr.merged,
    title: pr.title,
    htmlUrl: pr.htmlUrl,
    author: pr.user.login,
    labels: pr.labels.map((l) => l.name),
    createdAt: pr.createdAt,
    updatedAt: pr.updatedAt,
    head: { ref: pr.head.ref, sha: pr.head.sha },
  };
}

const lower = (labels: readonly string[]) => new Set(labels.map((l) => l.toLowerCase()));

/**
 * Whether the item may hold a fact baton has not acted on; only then is its timeline read. A
 * closed issue or pull request starts nothing (the pipeline ignores them), so it is skipped.
 */
export function mayHaveNews(item: CatchupItem, memory: ItemMemory): boolean {
  if (item.state === 'closed') return false;
  if (memory.openingUnseen === true && !item.isPull) return true;
  const seen = memory.labels === null ? new Set<string>() : lower(memory.labels);
  if (item.labels.some((l) => !seen.has(l.toLowerCase()))) return true;
  return item.head !== undefined && item.head.sha !== memory.head;
}

/** Decides the events for one open item. `windowStart` is the start of the catch-up window (ms, forge time). */
export function planItem(item: CatchupItem, memory: ItemMemory, timeline: readonly ForgeTimelineEvent[], windowStart: number): ItemPlan {
  const plan: ItemPlan = { events: [], skipped: [] };
  if (item.state === 'closed') return plan;
  const inWindow = (at: string) => Date.parse(at) >= windowStart;
  const entries = [...timeline].sort((a, b) => a.id - b.id);

  // A pull request opened inside the window, never seen: its opening is the event (one review of
  // its head as it is now); the labels follow as their own events below.
  const head = item.head;
  const openedNow = head !== undefined && memory.head === null && inWindow(item.createdAt);
  if (openedNow) plan.events.push({ kind: 'opened', sender: item.author, labels: [] });
  else if (head !== undefined && head.sha !== memory.head) {
    const push = entries.filter((e) => e.kind === 'pull_push').at(-1);
    if (push?.user && (memory.head !== null || inWindow(push.createdAt))) {
      plan.events.push({ kind: 'synchronized', sender: push.user, labels: [], entryId: push.id });
    } else if (memory.head !== null) {
      plan.skipped.push(`head ${head.sha.slice(0, 12)} of #${item.number} is new but the timeline names no one who pushed it`);
    }
    // No memory and no push inside the window: the head was there before baton looked.
  }

  // An issue opened while baton was not listening: its opening, with the labels its author gave
  // it (Gitea writes a `label` entry by the poster for each label set at creation); labels anyone
  // else added are their own events below, sent by whoever added them.
  const lastAdd = (label: string) =>
    entries.filter((e) => e.kind === 'label_added' && e.label?.toLowerCase() === label.toLowerCase()).at(-1);
  const issueOpened = !item.isPull && memory.openingUnseen === true;
  const authorLabels = issueOpened
    ? item.labels.filter((label) => {
        const entry = lastAdd(label);
        return !entry?.user || entry.user.toLowerCase() === item.author.toLowerCase();
      })
    : [];
  if (issueOpened) plan.events.push({ kind: 'opened', sender: item.author, labels: authorLabels });

  // Labels: newly present against memory; with no memory, added inside the window.
  const seen = issueOpened ? lower([...authorLabels, ...(memory.labels ?? [])]) : memory.labels === null ? null : lower(memory.labels);
  const fresh: { label: string; entry: ForgeTimelineEvent }[] = [];
  const kept: string[] = [];
  for (const label of item.labels) {
    if (seen?.has(label.toLowerCase())) {
      kept.push(label);
      continue;
    }
    const entry = lastAdd(label);
    if (seen === null && (!entry || !inWindow(entry.createdAt))) {
      kept.push(label);
      continue;
    }
    if (!entry?.user) {
      plan.skipped.push(`label "${label}" on #${item.number} is new but the timeline names no one who added it`);
      kept.push(label);
      continue;
    }
    fresh.push({ label, entry });
  }
  fresh.sort((a, b) => a.entry.id - b.entry.id);
  const carried = [...kept];
  for (const { label, entry } of fresh) {
    carried.push(label);
    // The item's own order of labels, as the forge lists them.
    const now = lower(carried);
    plan.events.push({
      kind: 'labels',
      sender: entry.user!,
      labels: item.labels.filter((l) => now.has(l.toLowerCase())),
      entryId: entry.id,
    });
  }
  if (memory.labels === null && !issueOpened && fresh.length > 0 && kept.length > 0) plan.seedLabels = kept;
  return plan;
}

/**
 * The comments to deliver: created at or after `windowStart` (ms, forge time), not recorded as
 * acted on (`seen` holds their facts), on an item catch-up knows. Oldest first. Each is sent by
 * its author, as its webhook was.
 */
export function planComments(
  comments: readonly ForgeRepoComment[],
  seen: ReadonlySet<string>,
  windowStart: number,
): { comment: ForgeRepoComment; event: PlannedEvent }[] {
  return [...comments]
    .filter((c) => Date.parse(c.createdAt) >= windowStart && !seen.has(`comment:${c.id}`) && c.user.login !== '')
    .sort((a, b) => Date.parse(a.createdAt) - Date.parse(b.createdAt) || a.id - b.id)
    .map((comment) => ({ comment, event: { kind: 'comment', sender: comment.user.login, labels: [], entryId: comment.id, comment } }));
}

/** The forge's review states that were submitted (and so sent a webhook), as the pipeline names them. */
const SUBMITTED: Partial<Record<ForgeReview['state'], 'approved' | 'rejected' | 'comment'>> = {
  APPROVED: 'approved',
  REQUEST_CHANGES: 'rejected',
  COMMENT: 'comment',
};

/**
 * The reviews of an open pull request to deliver: submitted (not pending, not a review request,
 * not dismissed since) at or after `windowStart`, by an account the forge still knows, whose fact `factOf` (the same
 * key the webhook's delivery records) is not in `seen`. Oldest first.
 */
export function planReviews(
  item: CatchupItem,
  reviews: readonly ForgeReview[],
  factOf: (review: ForgeReview, state: 'approved' | 'rejected' | 'comment') => string,
  seen: ReadonlySet<string>,
  windowStart: number,
): PlannedEvent[] {
  if (item.state === 'closed' || !item.isPull) return [];
  const events: PlannedEvent[] = [];
  for (const review of [...reviews].sort((a, b) => a.id - b.id)) {
    const state = SUBMITTED[review.state];
    // A dismissed review no longer stands (GitHub lists it as DISMISSED, its verdict gone).
    if (!state || review.dismissed || !review.user || !review.submittedAt || Date.parse(review.submittedAt) < windowStart) continue;
    if (seen.has(factOf(review, state))) continue;
    events.push({
      kind: 'review',
      sender: review.user.login,
      labels: item.labels,
      entryId: review.id,
      review: { state, body: review.body, commitId: review.commitId, submittedAt: review.submittedAt },
    });
  }
  return events;
}
