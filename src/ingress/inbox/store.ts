import { createHash, randomUUID } from 'node:crypto';
import { sql, type ExpressionBuilder, type Selectable } from 'kysely';
import type { Database, InboxDeliveriesTable, Store, TransactionScope } from '../../store/index.js';
import { createKnownRepositories } from '../known-repositories.js';
import {
  DELIVERY_STATUS,
  type ClaimedDelivery,
  type Delivery,
  type DeliveryFilter,
  type DeliveryOutcome,
  type DeliveryPage,
  type DeliverySource,
  type DeliveryStatus,
  type DeliveryVerdict,
  type NewDelivery,
} from './types.js';

/** The PostgreSQL channel an insert NOTIFYs, so the workers of other replicas look at once. */
export const INBOX_CHANNEL = 'baton_inbox';

type Row = Selectable<InboxDeliveriesTable>;

/**
 * Order per subject: a delivery `d` goes only when no earlier one of its issue is unprocessed
 * (pending, in backoff, or leased), so each issue's deliveries are processed strictly in order.
 */
function firstOfItsSubject({ not, exists, selectFrom }: ExpressionBuilder<Database & { d: InboxDeliveriesTable }, 'd'>) {
  return not(
    exists(
      selectFrom('inbox_deliveries as e')
        .select(sql.lit(1).as('one'))
        .whereRef('e.subject', '=', 'd.subject')
        .where('e.status', '<>', DELIVERY_STATUS.processed)
        .whereRef('e.id', '<', 'd.id'),
    ),
  );
}

/**
 * The inbox table's one door (migration 0045-inbox). Everything that stores or reads deliveries
 * goes through here: the accept path, the worker, catch-up (source `sync`) and the inspector.
 */
export interface InboxStore {
  /**
   * Stores a delivery; resolves once it has committed (then the forge may be answered). With
   * `scope`, inside that transaction (catch-up recording its sync mark alongside). Wakes the
   * worker after commit (here: `onInsert` listeners; other replicas: NOTIFY).
   */
  insert(delivery: NewDelivery, scope?: TransactionScope): Promise<Delivery>;
  /**
   * Takes up to `limit` due deliveries, earliest due first, each the first unprocessed one of its
   * subject (`owner/repo#n`): pending and due, or processing with an expired lease. One
   * transaction for the lot; empty when none is takeable.
   */
  claimDue(leaseMs: number, limit: number): Promise<ClaimedDelivery[]>;
  /** `claimDue(leaseMs, 1)`: the one delivery taken, or null. */
  claimNext(leaseMs: number): Promise<ClaimedDelivery | null>;
  /**
   * Records the verdict, in `scope`'s transaction (the one that enqueued its runs). False when the
   * lease was lost (another worker re-took it): the caller must roll back.
   */
  markProcessed(scope: TransactionScope, claimed: ClaimedDelivery, verdict: DeliveryVerdict): Promise<boolean>;
  /** Back to pending, due at `now + delayMs`, with the error that put it off. False when the lease was lost. */
  retryLater(claimed: ClaimedDelivery, delayMs: number, error: string): Promise<boolean>;
  get(id: number): Promise<Delivery | null>;
  /** Newest first, filtered, paged by id cursor. */
  list(filter?: DeliveryFilter): Promise<DeliveryPage>;
  /**
   * The earlier copies of a delivery: same body hash or same delivery id, received at or after
   * `since`, id below `id`. The worker dedups against them.
   */
  earlierCopies(delivery: Pick<Delivery, 'id' | 'bodySha256' | 'deliveryId'>, since: number): Promise<EarlierCopy[]>;
  /** When the next delivery becomes due or its lease expires (epoch ms); null when none is open. */
  nextDueAt(): Promise<number | null>;
  /** Deletes processed deliveries received before `before`. Returns how many. */
  prune(before: number): Promise<number>;
  /** Counts by status (gauges, readiness). */
  counts(): Promise<Record<DeliveryStatus, number>>;
  /** Calls `listener` after the commit of every insert in this process; returns the unsubscribe. */
  onInsert(listener: () => void): () => void;
}

export interface EarlierCopy {
  id: number;
  status: DeliveryStatus;
  outcome: DeliveryOutcome | null;
  stages: string[];
  labelsBefore: string[] | null;
  endpoint: string;
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** `owner/repo#n`, `owner/repo` or '' — lower-cased, as Gitea names are case-insensitive. */
export function subjectOf(repository: string | null, number: number | null): string {
  if (!repository) return '';
  return number === null ? repository.toLowerCase() : `${repository.toLowerCase()}#${number}`;
}

export function createInboxStore(
  store: Pick<Store, 'db' | 'dialect' | 'transaction' | 'notify' | 'prepare'>,
  now: () => number = Date.now,
): InboxStore {
  const listeners = new Set<() => void>();
  const announce = () => {
    for (const listener of listeners) {
      try {
        listener();
      } catch {
        // A wake-up is a hint; the worker's poll finds the row anyway.
      }
    }
  };

  // The accept path's one statement, prepared once (no query building per delivery) and
  // answering only the id: the rest of the row is what was just written.
  const insertStatement = store.prepare<{ id: number | string }>(insertSql(store.dialect));
  const known = createKnownRepositories(now);

  /** The row alone: the caller notifies once for its transaction. */
  async function insertRow(scope: TransactionScope, delivery: NewDelivery): Promise<Delivery> {
    const at = delivery.receivedAt ?? now();
    const repository = delivery.repository?.toLowerCase() ?? null;
    const bodySha256 = sha256Hex(delivery.body);
    const headers = JSON.stringify(delivery.headers);
    const [row] = await insertStatement.execute(scope.trx, [
      delivery.source,
      delivery.endpoint,
      delivery.deliveryId,
      delivery.event,
      delivery.eventType,
      headers,
      delivery.body,
      bodySha256,
      repository,
      delivery.number,
      subjectOf(repository, delivery.number),
      at,
      DELIVERY_STATUS.pending,
      at,
    ]);
    if (!row) throw new Error('inserting the delivery returned no row');
    if (delivery.signed && repository) await known.record(scope, repository);
    return {
      id: Number(row.id),
      source: delivery.source,
      endpoint: delivery.endpoint,
      deliveryId: delivery.deliveryId,
      event: delivery.event,
      eventType: delivery.eventType,
      headers: { ...delivery.headers },
      body: delivery.body,
      bodySha256,
      repository,
      number: delivery.number,
      receivedAt: at,
      status: DELIVERY_STATUS.pending,
      attempts: 0,
      nextAttemptAt: at,
      lastError: null,
      outcome: null,
      verdict: null,
      runIds: [],
      stages: [],
      labelsBefore: null,
      processedAt: null,
    };
  }

  async function insertIn(scope: TransactionScope, deliveries: readonly NewDelivery[]): Promise<Delivery[]> {
    const stored: Delivery[] = [];
    for (const delivery of deliveries) stored.push(await insertRow(scope, delivery));
    // One NOTIFY per transaction at most (store.notify). A caller's scope that inserts several
    // notifies once per row, which PostgreSQL folds into one.
    await store.notify(scope.trx, INBOX_CHANNEL);
    scope.afterCommit(announce);
    return stored;
  }

  /**
   * Group commit of the accept path. Deliveries stored without a scope wait for the end of the
   * event loop's turn (setImmediate: every request the turn's I/O brought in has been read by
   * then) and are written together, one transaction per slice of MAX_BATCH. Each caller still
   * resolves only after the COMMIT that holds its row. A commit per delivery cost more than the
   * rest of accepting it (profiled under `npm run bench:ingress`); this costs a delivery at most one turn.
   */
  let queued: Array<{ delivery: NewDelivery; resolve: (d: Delivery) => void; reject: (e: unknown) => void }> = [];
  let flushScheduled = false;
  const flush = () => {
    flushScheduled = false;
    const all = queued;
    queued = [];
    for (let i = 0; i < all.length; i += MAX_BATCH) {
      const batch = all.slice(i, i + MAX_BATCH);
      store
        .transaction((_trx, scope) =>
          insertIn(
            scope,
            batch.map((w) => w.delivery),
          ),
        )
        .then(
          (stored) => batch.forEach((w, j) => w.resolve(stored[j]!)),
          (err: unknown) => {
            if (batch.length === 1) return batch[0]!.reject(err);
            // One bad row must not cost its neighbours their 202: each is tried on its own.
            for (const w of batch) {
              store.transaction((_trx, scope) => insertIn(scope, [w.delivery])).then((one) => w.resolve(one[0]!), w.reject);
            }
          },
        );
    }
  };

  return {
    insert(delivery, scope) {
      if (scope) return insertIn(scope, [delivery]).then((stored) => stored[0]!);
      return new Promise<Delivery>((resolve, reject) => {
        queued.push({ delivery, resolve, reject });
        if (!flushScheduled) {
          flushScheduled = true;
          setImmediate(flush);
        }
      });
    },

    claimDue(leaseMs, limit) {
      return store.transaction(async (trx) => {
        const t = now();
        let query = trx
          .selectFrom('inbox_deliveries as d')
          .select('d.id')
          // A processing row's next_attempt_at is its lease's expiry (set below), so "due" is one
          // range over the open index whatever the status: the query reads only due rows, never
          // the whole backlog (a backlog of thousands must not slow each claim).
          .where('d.status', '<>', DELIVERY_STATUS.processed)
          .where('d.next_attempt_at', '<=', t)
          .where(firstOfItsSubject)
          .orderBy('d.next_attempt_at')
          .orderBy('d.id')
          .limit(Math.max(1, limit));
        // Replicas claim side by side: a row another claimer has locked is skipped, not waited for.
        // On SQLite BEGIN IMMEDIATE already serialises claimers.
        if (store.dialect === 'postgres') query = query.forUpdate().skipLocked();
        const picked = await query.execute();
        if (picked.length === 0) return [];
        const leaseToken = randomUUID();
        const rows = await trx
          .updateTable('inbox_deliveries')
          .set((eb) => ({
            status: DELIVERY_STATUS.processing,
            lease_token: leaseToken,
            lease_expires_at: t + leaseMs,
            next_attempt_at: t + leaseMs,
            attempts: eb('attempts', '+', 1),
          }))
          .where(
            'id',
            'in',
            picked.map((p) => p.id),
          )
          .returningAll()
          .execute();
        const order = new Map(picked.map((p, i) => [p.id, i]));
        rows.sort((a, b) => order.get(a.id)! - order.get(b.id)!);
        // One token for the batch: each row is still fenced on its own (id and token together).
        return rows.map((row) => ({ delivery: toDelivery(row), leaseToken }));
      });
    },

    async claimNext(leaseMs) {
      return (await this.claimDue(leaseMs, 1))[0] ?? null;
    },

    async markProcessed(scope, claimed, verdict) {
      const result = await scope.trx
        .updateTable('inbox_deliveries')
        .set({
          status: DELIVERY_STATUS.processed,
          outcome: verdict.outcome,
          verdict: verdict.verdict,
          run_ids: JSON.stringify([...(verdict.runIds ?? [])]),
          stages: JSON.stringify([...(verdict.stages ?? [])]),
          labels_before: verdict.labelsBefore ? JSON.stringify([...verdict.labelsBefore]) : null,
          lease_token: null,
          lease_expires_at: null,
          last_error: null,
          processed_at: now(),
        })
        .where('id', '=', claimed.delivery.id)
        .where('status', '=', DELIVERY_STATUS.processing)
        .where('lease_token', '=', claimed.leaseToken)
        .executeTakeFirst();
      return Number(result.numUpdatedRows) > 0;
    },

    async retryLater(claimed, delayMs, error) {
      const t = now();
      const result = await store.db
        .updateTable('inbox_deliveries')
        .set({
          status: DELIVERY_STATUS.pending,
          next_attempt_at: t + Math.max(0, delayMs),
          last_error: error.slice(0, 2000),
          lease_token: null,
          lease_expires_at: null,
        })
        .where('id', '=', claimed.delivery.id)
        .where('status', '=', DELIVERY_STATUS.processing)
        .where('lease_token', '=', claimed.leaseToken)
        .executeTakeFirst();
      return Number(result.numUpdatedRows) > 0;
    },

    async get(id) {
      const row = await store.db.selectFrom('inbox_deliveries').selectAll().where('id', '=', id).executeTakeFirst();
      return row ? toDelivery(row) : null;
    },

    async list(filter = {}) {
      const limit = Math.min(500, Math.max(1, filter.limit ?? 50));
      let query = store.db.selectFrom('inbox_deliveries').selectAll();
      if (filter.repository) query = query.where('repository', '=', filter.repository.toLowerCase());
      if (filter.event) {
        const event = filter.event;
        query = query.where((eb) => eb.or([eb('event', '=', event), eb('event_type', '=', event)]));
      }
      if (filter.outcome) query = query.where('outcome', '=', filter.outcome);
      if (filter.source) query = query.where('source', '=', filter.source);
      if (filter.status) query = query.where('status', '=', filter.status);
      if (filter.before !== undefined) query = query.where('id', '<', filter.before);
      const rows = await query
        .orderBy('id', 'desc')
        .limit(limit + 1)
        .execute();
      const page = rows.slice(0, limit).map(toDelivery);
      return { deliveries: page, nextCursor: rows.length > limit ? page[page.length - 1]!.id : null };
    },

    async earlierCopies(delivery, since) {
      const rows = await store.db
        .selectFrom('inbox_deliveries')
        .select(['id', 'status', 'outcome', 'stages', 'labels_before', 'endpoint'])
        .where('id', '<', delivery.id)
        .where('received_at', '>=', since)
        .where((eb) =>
          delivery.deliveryId === null
            ? eb('body_sha256', '=', delivery.bodySha256)
            : eb.or([eb('body_sha256', '=', delivery.bodySha256), eb('delivery_id', '=', delivery.deliveryId)]),
        )
        .orderBy('id')
        .execute();
      return rows.map((r) => ({
        id: r.id,
        status: r.status as DeliveryStatus,
        outcome: r.outcome as DeliveryOutcome | null,
        stages: parseStrings(r.stages) ?? [],
        labelsBefore: parseStrings(r.labels_before),
        endpoint: r.endpoint,
      }));
    },

    async nextDueAt() {
      // Earliest due first along the open index; rows queued behind an earlier one of their
      // subject wait for it, not for the clock, and are skipped (they are few: one issue's burst).
      const row = await store.db
        .selectFrom('inbox_deliveries as d')
        .select('d.next_attempt_at as due')
        .where('d.status', '<>', DELIVERY_STATUS.processed)
        .where(firstOfItsSubject)
        .orderBy('d.next_attempt_at')
        .orderBy('d.id')
        .limit(1)
        .executeTakeFirst();
      return row ? Number(row.due) : null;
    },

    async prune(before) {
      const result = await store.db
        .deleteFrom('inbox_deliveries')
        .where('status', '=', DELIVERY_STATUS.processed)
        .where('received_at', '<', before)
        .executeTakeFirst();
      return Number(result.numDeletedRows ?? 0n);
    },

    async counts() {
      const rows = await store.db
        .selectFrom('inbox_deliveries')
        .select(['status', (eb) => eb.fn.countAll<number>().as('n')])
        .groupBy('status')
        .execute();
      const counts: Record<DeliveryStatus, number> = { pending: 0, processing: 0, processed: 0 };
      for (const r of rows) counts[r.status as DeliveryStatus] = Number(r.n);
      return counts;
    },

    onInsert(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}

/** Deliveries written in one transaction at most: bounds how long a commit holds the event loop. */
const MAX_BATCH = 128;

const INSERT_COLUMNS = [
  'source',
  'endpoint',
  'delivery_id',
  'event',
  'event_type',
  'headers',
  'body',
  'body_sha256',
  'repository',
  'number',
  'subject',
  'received_at',
  'status',
  'next_attempt_at',
] as const satisfies ReadonlyArray<keyof InboxDeliveriesTable>;

function insertSql(dialect: Store['dialect']): string {
  const placeholders = INSERT_COLUMNS.map((_, i) => (dialect === 'postgres' ? `$${i + 1}` : '?'));
  return `INSERT INTO inbox_deliveries (${INSERT_COLUMNS.join(', ')}) VALUES (${placeholders.join(', ')}) RETURNING id`;
}

/**
 * An unprocessed row of the same subject as `d` with a smaller id (the partial subject index
 * answers it): while one exists, `d` must wait, because label memory depends on order.
 */
function parseStrings(text: string | null): string[] | null {
  if (text === null) return null;
  try {
    const value: unknown = JSON.parse(text);
    return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : null;
  } catch {
    return null;
  }
}

function parseNumbers(text: string | null): number[] {
  if (text === null) return [];
  try {
    const value: unknown = JSON.parse(text);
    return Array.isArray(value) ? value.filter((v): v is number => typeof v === 'number') : [];
  } catch {
    return [];
  }
}

function parseHeaders(text: string): Record<string, string> {
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return {};
    return Object.fromEntries(Object.entries(value).filter((e): e is [string, string] => typeof e[1] === 'string'));
  } catch {
    return {};
  }
}

export function toDelivery(row: Row): Delivery {
  return {
    id: row.id,
    source: row.source as DeliverySource,
    endpoint: row.endpoint,
    deliveryId: row.delivery_id,
    event: row.event,
    eventType: row.event_type,
    headers: parseHeaders(row.headers),
    body: row.body,
    bodySha256: row.body_sha256,
    repository: row.repository,
    number: row.number,
    receivedAt: row.received_at,
    status: row.status as DeliveryStatus,
    attempts: row.attempts,
    nextAttemptAt: row.next_attempt_at,
    lastError: row.last_error,
    outcome: row.outcome as DeliveryOutcome | null,
    verdict: row.verdict,
    runIds: parseNumbers(row.run_ids),
    stages: parseStrings(row.stages) ?? [],
    labelsBefore: parseStrings(row.labels_before),
    processedAt: row.processed_at,
  };
}
