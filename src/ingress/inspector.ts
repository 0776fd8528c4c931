import type { Selectable } from 'kysely';
import type { InboxDeliveriesTable, Store } from '../store/index.js';
import { DELIVERY_SOURCE, DELIVERY_STATUS, type InboxStore } from './inbox/index.js';
import { toDelivery } from './inbox/store.js';
import type { Spool, SpoolHealth } from './spool/index.js';

type Row = Selectable<InboxDeliveriesTable>;

/**
 * The deliveries inspector: reads of the inbox for people (API, CLI, dashboard)
 * and the replay of one delivery. It never processes anything itself: the inbox worker stays the
 * one place that does.
 *
 * A replay is a new inbox row with source `replay`, a copy of the original's headers and body,
 * `replay_of` naming the original and `replayed_by` the operator's token name. The inbox worker
 * processes a `replay` row past the duplicate check on purpose: that is what a replay is for. Who
 * replayed is shown in the original's history; it never reaches the forge.
 */

/** The sources a delivery can have: a forge webhook, catch-up from the forge API, an operator's replay. */
export const DELIVERY_SOURCES = ['webhook', 'sync', 'replay'] as const;
export type InspectorSource = (typeof DELIVERY_SOURCES)[number];

/** What `GET /api/deliveries` shows of each delivery. */
export interface DeliveryView {
  id: number;
  /** X-Gitea-Delivery as the forge sent it; null for catch-up, replays, and senders that gave none. */
  deliveryId: string | null;
  source: string;
  /** The path it was delivered to (`/webhook/gitea`, a legacy path). */
  endpoint: string;
  /** X-Gitea-Event (`issues`, `pull_request`, …). */
  event: string | null;
  /** X-Gitea-Event-Type, finer (`issue_label`, `pull_request_sync`, …). */
  eventType: string | null;
  /** `owner/repo`, lower-cased. */
  repository: string | null;
  number: number | null;
  receivedAt: number;
  /** `pending`, `processing` or `processed`. */
  status: string;
  /** The verdict's kind (`started`, `ignored`, `duplicate`, …); `pending` until processed. */
  outcome: string;
  /** The verdict in words; null until processed. */
  verdict: string | null;
  attempts: number;
  /** The last transient failure, while it is being retried. */
  lastError: string | null;
  processedAt: number | null;
  /** The original, when this delivery is a replay. */
  replayOf: number | null;
  /** The runs it started (or joined), with their API path. */
  runs: Array<{ id: number; url: string }>;
}

export interface DeliveryHistoryEntry {
  at: number;
  /** `received`, `retrying`, `processed`, `replayed`. */
  type: string;
  detail: string | null;
  /** For `replayed`: the replay's own delivery id. */
  deliveryId?: number;
}

/** What `GET /api/deliveries/:id` shows: the view, its headers (secrets masked), body and history. */
export interface DeliveryDetail extends DeliveryView {
  sha256: string;
  headers: Record<string, string>;
  /** The payload as received, but for the deprecated top-level `secret` of old Gitea payloads, masked. */
  body: string;
  history: DeliveryHistoryEntry[];
}

export interface InspectorFilter {
  /** `owner/repo`, lower-cased. */
  repository?: string;
  /** Matches X-Gitea-Event or X-Gitea-Event-Type. */
  event?: string;
  /** Matches the verdict's kind (`outcome`); `pending` finds the unprocessed ones. */
  verdict?: string;
  source?: InspectorSource;
  /** Opaque, from a previous page's `nextCursor`. */
  cursor?: string;
  /** @default 50 */
  limit?: number;
}

export interface InspectorPage {
  deliveries: DeliveryView[];
  nextCursor: string | null;
}

/** A request the inspector refuses, with why: the HTTP layer turns `code` into a status. */
export class InspectorError extends Error {
  constructor(
    readonly code: 'not_found' | 'not_processed' | 'bad_cursor',
    message: string,
  ) {
    super(message);
    this.name = 'InspectorError';
  }
}

export interface DeliveryInspector {
  /** Newest first (received time, then id), filtered, one page at a time. */
  list(filter?: InspectorFilter): Promise<InspectorPage>;
  get(id: number): Promise<DeliveryDetail | null>;
  /** Stores a copy of a processed delivery as a `replay` and wakes the inbox; returns the copy. */
  replay(id: number, by: { tokenName: string }): Promise<DeliveryView>;
  /**
   * This replica's accept path: what its spool holds for the database, and the deliveries it
   * refused with 503 (stored neither in the database nor in the spool). Read from memory, so it
   * answers while the database is away.
   */
  health(): DeliveriesHealth;
}

export interface DeliveriesHealth {
  /** null when this process has no spool (outside `baton serve`). */
  spool: SpoolHealth | null;
}

/** Shown instead of a secret; the same six stars Gitea's own delivery record uses. */
export const MASK = '******';

/**
 * Headers whose value is a credential or proves one: the signatures (`X-Gitea-Signature`,
 * `X-Gogs-Signature`, `X-Hub-Signature(-256)`, `X-Forgejo-Signature`), Gitea's optional
 * Authorization header (reference: gitea/WEBHOOKS.md, "Delivery"), and anything named like a secret.
 */
const SECRET_HEADER = /signature|secret|token|auth|cookie|password|passwd|credential|api[-_]?key|session/i;

export function maskHeaders(headers: Record<string, unknown>): Record<string, string> {
  const masked: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    const text = typeof value === 'string' ? value : JSON.stringify(value);
    masked[name] = SECRET_HEADER.test(name) && text !== '' ? MASK : text;
  }
  return masked;
}

/**
 * Old Gitea payloads (≤ 1.13) carry the webhook's secret in a top-level `"secret"` field
 * (reference: gitea/WEBHOOKS.md, and payloads/gitea-pull_request-synchronized-legacy-2018.json).
 * Such a body is shown re-indented the way Gitea writes it, with the secret masked; any other body
 * is shown byte for byte.
 */
export function maskBody(body: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return body;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed) || !('secret' in parsed)) return body;
  const secret = (parsed as { secret: unknown }).secret;
  if (secret === '' || secret === null) return body;
  return JSON.stringify({ ...parsed, secret: MASK }, null, 2);
}

/**
 * The page's last row as a cursor nobody should build by hand: pages go by id, newest first (ids
 * grow in the order deliveries are stored, so the order is stable while new ones arrive), and the
 * encoding leaves room to page by something else later without breaking saved cursors.
 */
export function encodeCursor(id: number): string {
  return Buffer.from(JSON.stringify({ before: id })).toString('base64url');
}

export function decodeCursor(cursor: string): number {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    const before = (value as { before?: unknown } | null)?.before;
    if (typeof before === 'number' && Number.isSafeInteger(before) && before > 0) return before;
  } catch {
    // Falls through to the error below.
  }
  throw new InspectorError('bad_cursor', `cursor "${cursor.slice(0, 40)}" is not one this API gave out: use a page's nextCursor as it is`);
}

export interface DeliveryInspectorOptions {
  inbox: InboxStore;
  /** Reads of the inbox table with the replay columns (migration 0050), and the replay's transaction. */
  store: Pick<Store, 'db' | 'transaction'>;
  spool?: Pick<Spool, 'health'>;
}

export function createDeliveryInspector({ inbox, store, spool }: DeliveryInspectorOptions): DeliveryInspector {
  const { db } = store;
  return {
    health() {
      return { spool: spool?.health() ?? null };
    },

    async list(filter = {}) {
      const limit = Math.min(MAX_PAGE, Math.max(1, filter.limit ?? 50));
      let query = db.selectFrom('inbox_deliveries').selectAll();
      if (filter.repository) query = query.where('repository', '=', filter.repository.toLowerCase());
      if (filter.event) {
        const event = filter.event;
        query = query.where((eb) => eb.or([eb('event', '=', event), eb('event_type', '=', event)]));
      }
      // "pending" is every delivery without a verdict yet, whether it waits or is being processed.
      if (filter.verdict === PENDING) query = query.where('status', '<>', DELIVERY_STATUS.processed);
      else if (filter.verdict) query = query.where('outcome', '=', filter.verdict);
      if (filter.source) query = query.where('source', '=', filter.source);
      if (filter.cursor !== undefined) query = query.where('id', '<', decodeCursor(filter.cursor));
      const rows = await query
        .orderBy('id', 'desc')
        .limit(limit + 1)
        .execute();
      const page = rows.slice(0, limit).map(viewOf);
      return { deliveries: page, nextCursor: rows.length > limit ? encodeCursor(page[page.length - 1]!.id) : null };
    },

    async get(id) {
      const row = await db.selectFrom('inbox_deliveries').selectAll().where('id', '=', id).executeTakeFirst();
      if (!row) return null;
      const replays = await db
        .selectFrom('inbox_deliveries')
        .select(['id', 'received_at', 'replayed_by'])
        .where('replay_of', '=', id)
        .orderBy('id')
        .execute();
      const delivery = toDelivery(row);
      return {
        ...viewOf(row),
        sha256: delivery.bodySha256,
        headers: maskHeaders(delivery.headers),
        body: maskBody(delivery.body),
        history: historyOf(
          row,
          replays.map((r) => ({ id: r.id, at: Number(r.received_at), by: r.replayed_by })),
        ),
      };
    },

    async replay(id, by) {
      const row = await db.selectFrom('inbox_deliveries').selectAll().where('id', '=', id).executeTakeFirst();
      if (!row) throw new InspectorError('not_found', `delivery ${id} does not exist (or was pruned after the retention period)`);
      const original = toDelivery(row);
      if (original.status !== DELIVERY_STATUS.processed) {
        // Its verdict is still to come: a replay now would process the same event twice at once.
        throw new InspectorError(
          'not_processed',
          `delivery ${id} is ${original.status} (attempt ${original.attempts}): it will be processed; replay it once it has a verdict`,
        );
      }
      const copied = await store.transaction(async (trx, scope) => {
        // The inbox's own insert, so the worker is woken after commit like for any delivery.
        const copy = await inbox.insert(
          {
            source: DELIVERY_SOURCE.replay,
            endpoint: original.endpoint,
            // Not the forge's id: the forge never sent this copy. The original's is in its headers.
            deliveryId: null,
            event: original.event,
            eventType: original.eventType,
            headers: original.headers,
            body: original.body,
            repository: original.repository,
            number: original.number,
          },
          scope,
        );
        return (
          trx
            .updateTable('inbox_deliveries')
            // The original's label memory goes along: a replayed label event diffs against what the
            // original saw, so the stage it started (or should have) starts again.
            .set({ replay_of: original.id, replayed_by: by.tokenName, labels_before: row.labels_before })
            .where('id', '=', copy.id)
            .returningAll()
            .executeTakeFirstOrThrow()
        );
      });
      return viewOf(copied);
    },
  };
}

/** Largest page, whatever the caller asks. */
const MAX_PAGE = 200;
const PENDING = 'pending';

function viewOf(row: Row): DeliveryView {
  const d = toDelivery(row);
  return {
    id: d.id,
    deliveryId: d.deliveryId,
    source: d.source,
    endpoint: d.endpoint,
    event: d.event,
    eventType: d.eventType,
    repository: d.repository,
    number: d.number,
    receivedAt: d.receivedAt,
    status: d.status,
    outcome: d.outcome ?? PENDING,
    verdict: d.verdict,
    attempts: d.attempts,
    lastError: d.status === DELIVERY_STATUS.processed ? null : d.lastError,
    processedAt: d.processedAt,
    replayOf: row.replay_of === null ? null : Number(row.replay_of),
    runs: d.runIds.map((runId) => ({ id: runId, url: `/api/runs/${runId}` })),
  };
}

/** What happened to a delivery, oldest first: stored, put off, processed, replayed (by whom). */
function historyOf(row: Row, replays: Array<{ id: number; at: number; by: string | null }>): DeliveryHistoryEntry[] {
  const d = toDelivery(row);
  const history: DeliveryHistoryEntry[] = [
    {
      at: d.receivedAt,
      type: 'received',
      detail:
        row.replay_of === null
          ? `${d.source} via ${d.endpoint}`
          : `replay of delivery #${row.replay_of}${row.replayed_by ? ` by token "${row.replayed_by}"` : ''}`,
    },
  ];
  // Only while pending: a taken delivery's next_attempt_at is its lease's expiry, not a retry time.
  if (d.status === DELIVERY_STATUS.pending && d.lastError) {
    history.push({ at: d.nextAttemptAt, type: 'retrying', detail: `attempt ${d.attempts} failed: ${d.lastError}; next attempt then` });
  }
  if (d.processedAt !== null) history.push({ at: d.processedAt, type: 'processed', detail: d.verdict });
  for (const r of replays) {
    history.push({
      at: r.at,
      type: 'replayed',
      detail: `by token "${r.by ?? 'unknown'}" as delivery #${r.id}`,
      deliveryId: r.id,
    });
  }
  return history.sort((a, b) => a.at - b.at);
}
