import type { ForgeIssue, ForgePullRequest, ForgeTimelineEvent } from '../forge/index.js';

/**
 * What catch-up decides for one issue or pull request, from its state on the forge now, baton's
 * memory of it, and its timeline. Pure: no I/O.
 *
 * The facts catch-up looks for are the ones a lost webhook would have carried:
 * - a label newly present against the label memory (Gitea's `label_updated`), one event per label
 *   in the order they were added, each sent by whoever added it (the timeline says who): a label a
 *   bot account added starts nothing, as its webhook would not have;
 * - a pull request opened while baton was not listening (`opened`, sent by its author);
 * - a pull request head baton has not acted on (`synchronized`, sent by whoever pushed it).
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
}

/** One event to put in the inbox, shaped as the Gitea webhook that would have said it. */
export interface PlannedEvent {
  kind: 'labels' | 'opened' | 'synchronized';
  sender: string;
  /** The labels the event carries (the item's labels as they were after this change). */
  labels: string[];
  /** The timeline entry the fact comes from, when there is one (it makes the event unique). */
  entryId?: number;
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

  // Labels: newly present against memory; with no memory, added inside the window.
  const seen = memory.labels === null ? null : lower(memory.labels);
  const lastAdd = (label: string) =>
    entries.filter((e) => e.kind === 'label_added' && e.label?.toLowerCase() === label.toLowerCase()).at(-1);
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
  if (seen === null && fresh.length > 0 && kept.length > 0) plan.seedLabels = kept;
  return plan;
}
