import crypto from 'node:crypto';
import { sql, type ExpressionBuilder } from 'kysely';
import type { Store } from '../store/index.js';
import { toEntry } from './map.js';
import { withOutboxTable, type OutboxDatabase } from './table.js';
import { OUTBOX_STATUS, type OutboxEntry } from './types.js';

export interface ClaimedEntry {
  entry: OutboxEntry;
  /** Fences the settle step: a worker whose lease expired cannot settle a re-claimed entry. */
  leaseToken: string;
}

/**
 * An entry may go out only when no older entry with its ordering key is still pending: that is
 * what keeps comments on one issue (and webhooks of one run) in order, retries included.
 */
export function isHeadOfItsKey(eb: ExpressionBuilder<OutboxDatabase & { o: OutboxDatabase['outbox'] }, 'o'>) {
  return eb.or([
    eb('o.ordering_key', 'is', null),
    eb.not(
      eb.exists(
        eb
          .selectFrom('outbox as older')
          .select(sql.lit(1).as('one'))
          .whereRef('older.ordering_key', '=', 'o.ordering_key')
          .where('older.status', '=', OUTBOX_STATUS.pending)
          .whereRef('older.id', '<', 'o.id'),
      ),
    ),
  ]);
}

/**
 * Claims up to `limit` due entries of the given kinds: pending, due, not leased by anyone, and
 * first of their ordering key. One transaction: `BEGIN IMMEDIATE` serialises claimers on SQLite;
 * on PostgreSQL `FOR UPDATE SKIP LOCKED` lets replicas claim side by side without waiting on or
 * double-claiming each other's rows. The attempt is counted at claim time, so a worker that
 * crashes mid-delivery still uses up an attempt.
 */
export async function claimDue(
  store: Store,
  options: { kinds: readonly string[]; limit: number; leaseMs: number; now: number },
): Promise<ClaimedEntry[]> {
  if (options.limit <= 0 || options.kinds.length === 0) return [];
  const { now } = options;
  return store.transaction(async (trx) => {
    const db = withOutboxTable(trx);
    let query = db
      .selectFrom('outbox as o')
      .select('o.id')
      .where('o.status', '=', OUTBOX_STATUS.pending)
      .where('o.kind', 'in', options.kinds)
      .where('o.next_attempt_at', '<=', now)
      .where((eb) => eb.or([eb('o.lease_expires_at', 'is', null), eb('o.lease_expires_at', '<=', now)]))
      .where(isHeadOfItsKey)
      .orderBy('o.next_attempt_at')
      .orderBy('o.id')
      .limit(options.limit);
    if (store.dialect === 'postgres') query = query.forUpdate().skipLocked();
    const ids = (await query.execute()).map((r) => r.id);
    if (ids.length === 0) return [];
    const leaseToken = crypto.randomUUID();
    const rows = await db
      .updateTable('outbox')
      .set((eb) => ({
        lease_token: leaseToken,
        lease_expires_at: now + options.leaseMs,
        attempts: eb('attempts', '+', 1),
        updated_at: now,
      }))
      .where('id', 'in', ids)
      .returningAll()
      .execute();
    return rows.sort((a, b) => a.id - b.id).map((row) => ({ entry: toEntry(row), leaseToken }));
  });
}

/**
 * When the next entry may become claimable (epoch ms), or null when nothing is pending. Entries
 * queued behind an older one of their key don't count: they wait for it, not for the clock.
 */
export async function nextDueAt(store: Store, kinds: readonly string[]): Promise<number | null> {
  if (kinds.length === 0) return null;
  const row = await withOutboxTable(store.db)
    .selectFrom('outbox as o')
    .select((eb) =>
      eb.fn.min(sql<number>`CASE WHEN o.lease_expires_at > o.next_attempt_at THEN o.lease_expires_at ELSE o.next_attempt_at END`).as('due'),
    )
    .where('o.status', '=', OUTBOX_STATUS.pending)
    .where('o.kind', 'in', kinds)
    .where(isHeadOfItsKey)
    .executeTakeFirst();
  const due = row?.due;
  return due === null || due === undefined ? null : Number(due);
}
