import {
  backoffDelay,
  createLoop,
  createQueueWorker,
  errorMessage,
  PermanentError,
  RetryLaterError,
  type Loop,
} from '../background/index.js';
import type { Store, TransactionScope } from '../store/index.js';
import { claimDue, nextDueAt, type ClaimedEntry } from './claim.js';
import { DEFAULT_MAX_ATTEMPTS, enqueueOutbox, prepareOutboxInsert } from './enqueue.js';
import { toEntry } from './map.js';
import { markDelivered, markFailed, markRetry } from './settle.js';
import { withOutboxTable } from './table.js';
import {
  OUTBOX_STATUS,
  type NewOutboxEntry,
  type OutboxStatus,
  type OutboxEntry,
  type OutboxFilter,
  type OutboxHandler,
  type OutboxLogger,
} from './types.js';

export interface OutboxOptions {
  store: Store;
  /** Delivery per kind. Entries of kinds without a handler stay pending for a worker that has one. */
  handlers: Readonly<Partial<Record<string, OutboxHandler>>>;
  /** Deliveries in flight at once (across ordering keys). @default 4 */
  concurrency?: number;
  /** Attempts before an entry is `failed`, for entries that don't set their own. @default 20 */
  maxAttempts?: number;
  /** First retry delay; doubles per attempt, with jitter. @default 5_000 */
  backoffBaseMs?: number;
  /** @default 600_000 (10 minutes) */
  backoffMaxMs?: number;
  /**
   * How long a claimed entry is reserved for its worker. Must exceed the slowest delivery (the
   * forge client's timeout), or a slow delivery may be repeated by another worker.
   * @default 60_000
   */
  leaseMs?: number;
  /**
   * Fallback poll: wake-ups normally come from the commit of an entry (`enqueue`, `add`) and
   * from the due time of the next retry; this catches entries added by other processes.
   * @default 5_000
   */
  pollMs?: number;
  /**
   * PostgreSQL `NOTIFY` channel whose messages wake the worker, so entries committed by another
   * replica go out at once instead of at its next poll. The run engine notifies its
   * `NOTIFY_CHANNEL` after every transition, the ones that queue status comments included.
   * Ignored on SQLite.
   * @example 'baton'
   */
  wakeChannel?: string;
  /** @default Date.now */
  now?: () => number;
  /** @default Math.random */
  random?: () => number;
  logger?: OutboxLogger;
}

export interface DeliveryReport {
  delivered: number;
  retried: number;
  failed: number;
}

export interface Outbox {
  /**
   * Adds an entry inside the caller's transaction; the worker is woken once that transaction
   * has committed (and not at all when it rolls back). Null when deduplicated.
   */
  enqueue(scope: TransactionScope, entry: NewOutboxEntry): Promise<number | null>;
  /** Adds an entry in its own transaction and wakes the worker. Null when deduplicated. */
  add(entry: NewOutboxEntry): Promise<number | null>;
  /** Look for due entries now (entries written by hand, or by another process without NOTIFY). */
  wake(): void;
  /** Starts the delivery loop. A second call while it runs returns the same promise. */
  start(): Promise<void>;
  /** Stops claiming, waits for deliveries in flight. A second call returns the same promise. */
  stop(): Promise<void>;
  /** Claims and delivers what is due right now, once, and waits for it (tests, `baton outbox flush`). */
  deliverDue(): Promise<DeliveryReport>;
  get(id: number): Promise<OutboxEntry | null>;
  /** Newest first. */
  list(filter?: OutboxFilter): Promise<OutboxEntry[]>;
  /** Re-arms a `failed` entry with fresh attempts. False when it is not `failed`. */
  retry(id: number): Promise<boolean>;
  /** Entries per status (for metrics and `/ready`). */
  counts(): Promise<Record<OutboxStatus, number>>;
  /** Deletes delivered entries older than `olderThanMs`; failed ones stay for inspection. Returns how many. */
  prune(olderThanMs: number): Promise<number>;
}

const silent: OutboxLogger = { warn() {}, error() {} };
const MAX_ERROR_LENGTH = 2_000;

/**
 * Durable delivery of side effects. Entries are written in the transaction that causes them;
 * the worker claims due ones with a lease, delivers, and settles each with a fenced update.
 * A forge outage only delays entries: nothing is lost, nothing blocks the caller.
 */
export function createOutbox(options: OutboxOptions): Outbox {
  const { store } = options;
  const now = options.now ?? Date.now;
  const random = options.random ?? Math.random;
  const logger = options.logger ?? silent;
  const concurrency = Math.max(1, options.concurrency ?? 4);
  const maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
  const backoff = { baseMs: options.backoffBaseMs ?? 5_000, maxMs: options.backoffMaxMs ?? 600_000 };
  const leaseMs = options.leaseMs ?? 60_000;
  const pollMs = options.pollMs ?? 5_000;
  const kinds = Object.keys(options.handlers).filter((k) => options.handlers[k] !== undefined);
  const insert = prepareOutboxInsert(store);

  const inFlight = new Set<Promise<DeliveryReport>>();

  /** Made at each start: a stopped outbox can be started again (a test, `baton outbox flush`). */
  const createWorkerLoop = (): Loop =>
    createLoop({
      name: 'outbox worker',
      logger,
      pollMs,
      async step() {
        const free = concurrency - inFlight.size;
        // With no free slot, a settling delivery wakes the loop.
        if (free <= 0) return pollMs;
        // A plain read first: on SQLite a claim takes the single write lock, which the run
        // engine needs too, so it is only taken when something is due.
        const due = await nextDueAt(store, kinds);
        if (due === null) return pollMs;
        if (due <= now()) {
          const batch = await claim(free);
          for (const item of batch) void track(item);
          // Look again at once: more may be due, or the next due time has changed.
          if (batch.length > 0) return 0;
          // Due but nothing claimed: another worker is claiming it right now; give it a moment.
          return 10;
        }
        return Math.max(10, due - now());
      },
    });
  // Entries committed by another replica go out at once instead of at its next poll.
  const channel = store.dialect === 'postgres' ? options.wakeChannel : undefined;
  const worker = createQueueWorker({
    name: 'outbox',
    logger,
    createLoop: createWorkerLoop,
    wakeSources: channel ? [(wake) => store.listen(channel, wake)] : [],
    inFlight,
  });
  const wake = worker.wake;

  async function deliver({ entry, leaseToken }: ClaimedEntry): Promise<DeliveryReport> {
    const report: DeliveryReport = { delivered: 0, retried: 0, failed: 0 };
    const handler = options.handlers[entry.kind]!;
    let outcome: { ok: true; result: unknown } | { ok: false; error: unknown };
    try {
      outcome = { ok: true, result: await handler(entry) };
    } catch (error) {
      outcome = { ok: false, error };
    }
    try {
      const at = now();
      if (outcome.ok) {
        if (await markDelivered(store, entry.id, leaseToken, outcome.result, at)) report.delivered++;
        else logger.warn({ outboxId: entry.id, kind: entry.kind }, 'outbox entry was delivered after its lease expired');
        return report;
      }
      const message = describe(outcome.error);
      const permanent = outcome.error instanceof PermanentError;
      if (permanent || entry.attempts >= entry.maxAttempts) {
        await markFailed(store, entry.id, leaseToken, message, at);
        report.failed++;
        logger.error(
          { outboxId: entry.id, kind: entry.kind, runId: entry.runId, attempts: entry.attempts, error: message },
          permanent ? 'outbox delivery failed permanently' : 'outbox delivery gave up after its last attempt',
        );
        return report;
      }
      let delay = backoffDelay(backoff, entry.attempts, random);
      if (outcome.error instanceof RetryLaterError) delay = Math.max(delay, outcome.error.delayMs ?? 0);
      await markRetry(store, entry.id, leaseToken, message, at + delay, at);
      report.retried++;
      logger.warn(
        { outboxId: entry.id, kind: entry.kind, runId: entry.runId, attempts: entry.attempts, retryInMs: delay, error: message },
        'outbox delivery failed, will retry',
      );
    } catch (err) {
      // The database is unreachable: the lease runs out and the entry is delivered again later.
      logger.error({ outboxId: entry.id, error: describe(err) }, 'could not record an outbox delivery');
    }
    return report;
  }

  function track(claimed: ClaimedEntry): Promise<DeliveryReport> {
    const promise = deliver(claimed).finally(() => {
      inFlight.delete(promise);
      // A free slot, and possibly the next entry of the same ordering key.
      wake();
    });
    inFlight.add(promise);
    return promise;
  }

  async function claim(limit: number): Promise<ClaimedEntry[]> {
    return claimDue(store, { kinds, limit, leaseMs, now: now() });
  }

  const outbox: Outbox = {
    async enqueue(scope, entry) {
      const id = await enqueueOutbox(scope.trx, insert, entry, { now: now(), maxAttempts });
      if (id !== null) scope.afterCommit(wake);
      return id;
    },
    add(entry) {
      return store.transaction((_trx, scope) => outbox.enqueue(scope, entry));
    },
    wake,
    start: worker.start,
    stop: worker.stop,
    async deliverDue() {
      const total: DeliveryReport = { delivered: 0, retried: 0, failed: 0 };
      for (;;) {
        const claimed = await claim(concurrency);
        if (claimed.length === 0) return total;
        for (const report of await Promise.all(claimed.map(track))) {
          total.delivered += report.delivered;
          total.retried += report.retried;
          total.failed += report.failed;
        }
      }
    },
    async get(id) {
      const row = await withOutboxTable(store.db).selectFrom('outbox').selectAll().where('id', '=', id).executeTakeFirst();
      return row ? toEntry(row) : null;
    },
    async list(filter = {}) {
      let query = withOutboxTable(store.db).selectFrom('outbox').selectAll();
      if (filter.status) query = query.where('status', '=', filter.status);
      if (filter.kind) query = query.where('kind', '=', filter.kind);
      if (filter.runId !== undefined) query = query.where('run_id', '=', filter.runId);
      const rows = await query
        .orderBy('id', 'desc')
        .limit(filter.limit ?? 100)
        .execute();
      return rows.map(toEntry);
    },
    async retry(id) {
      const at = now();
      const res = await withOutboxTable(store.db)
        .updateTable('outbox')
        .set({ status: OUTBOX_STATUS.pending, attempts: 0, next_attempt_at: at, updated_at: at })
        .where('id', '=', id)
        .where('status', '=', OUTBOX_STATUS.failed)
        .executeTakeFirst();
      const changed = Number(res.numUpdatedRows) === 1;
      if (changed) wake();
      return changed;
    },
    async counts() {
      const rows = await withOutboxTable(store.db)
        .selectFrom('outbox')
        .select((eb) => ['status', eb.fn.countAll<number>().as('n')])
        .groupBy('status')
        .execute();
      const counts: Record<OutboxStatus, number> = { pending: 0, delivered: 0, failed: 0 };
      for (const row of rows) if (row.status in counts) counts[row.status as OutboxStatus] = Number(row.n);
      return counts;
    },
    async prune(olderThanMs) {
      const res = await withOutboxTable(store.db)
        .deleteFrom('outbox')
        .where('status', '=', OUTBOX_STATUS.delivered)
        .where('delivered_at', '<', now() - olderThanMs)
        .executeTakeFirst();
      return Number(res.numDeletedRows);
    },
  };
  return outbox;
}

function describe(err: unknown): string {
  const text = errorMessage(err);
  return text.length > MAX_ERROR_LENGTH ? `${text.slice(0, MAX_ERROR_LENGTH)}…` : text;
}
