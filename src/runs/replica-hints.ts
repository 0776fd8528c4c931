import type { Store } from '../store/index.js';

/**
 * One NOTIFY channel for everything other replicas must hear: payload `wake` (new work may be
 * available; also implies new events) or `events` (new timeline events only, e.g. progress, or a
 * freed concurrency slot, which the replica that freed it fills: see `bringsWork`).
 */
export const NOTIFY_CHANNEL = 'baton';

/** Least time between two NOTIFYs that carry only `events`. */
const EVENTS_HINT_MS = 20;

/** What a hint tells other replicas: new work (`wake`), or new timeline events only. */
export type ReplicaHint = 'wake' | 'events';

/**
 * NOTIFY after commit, coalesced: one in flight at a time, carrying everything since the last.
 * NOTIFY inside a writing transaction holds PostgreSQL's global notify lock through the commit's
 * WAL flush, serialising every commit that notifies; a hint is only a hint (the dispatcher polls).
 * A `wake` (new work) goes at the end of this turn of the event loop (`setImmediate`), so the
 * commits answered in the same turn, and the effects of each (its events, then its wake-up),
 * send a single NOTIFY. `events` alone (live views, other replicas' outboxes) go at most once
 * every `EVENTS_HINT_MS`: at full speed a NOTIFY per transition cost a round trip per run.
 *
 * Returns the function that hints; on SQLite (one process) it does nothing.
 */
export function createReplicaHints(store: Pick<Store, 'dialect' | 'notify' | 'db'>): (kind: ReplicaHint) => void {
  let pending: ReplicaHint | undefined;
  let sending = false;
  let cancelTimer: (() => void) | undefined;
  let lastSentAt = Number.NEGATIVE_INFINITY;

  function schedule(): void {
    if (sending || !pending) return;
    const wait = pending === 'wake' ? 0 : Math.max(0, lastSentAt + EVENTS_HINT_MS - performance.now());
    // An `events` hint already waiting keeps its time; a `wake` replaces it.
    if (cancelTimer && wait > 0) return;
    cancelTimer?.();
    if (wait === 0) {
      const immediate = setImmediate(send);
      cancelTimer = () => clearImmediate(immediate);
    } else {
      const timer = setTimeout(send, wait);
      timer.unref();
      cancelTimer = () => clearTimeout(timer);
    }
  }

  function send(): void {
    cancelTimer = undefined;
    const payload = pending;
    if (!payload) return;
    pending = undefined;
    sending = true;
    lastSentAt = performance.now();
    // A lost hint costs latency only: the other replicas' fallback polls find the change.
    void store
      .notify(store.db, NOTIFY_CHANNEL, payload)
      .catch(() => {})
      .finally(() => {
        sending = false;
        schedule();
      });
  }

  return (kind) => {
    if (store.dialect !== 'postgres') return;
    pending = kind === 'wake' || pending === 'wake' ? 'wake' : 'events';
    schedule();
  };
}
