import { createHash, timingSafeEqual } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from '../store/index.js';
import { toRun } from './rows.js';
import type { Run } from './types.js';

/** Row of `callback_token_history` (migration 0060), as stored. */
export interface CallbackTokenHistoryTable {
  run_id: number;
  /** SHA-256 (hex) of a token an earlier attempt of the run gave its workspace. */
  token_hash: string;
  replaced_at: number;
}

type HistoryDatabase = Database & { callback_token_history: CallbackTokenHistoryTable };

/** The store's handle, typed to include the history table (its type lives here, next to its only users). */
export function withTokenHistory(db: Kysely<Database>): Kysely<HistoryDatabase> {
  return db.withTables<{ callback_token_history: CallbackTokenHistoryTable }>();
}

export function hashCallbackToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** Whether `token` hashes to one of `hashes`; every hash is compared in constant time. */
export function matchesAnyHash(token: string, hashes: readonly string[]): boolean {
  const actual = Buffer.from(hashCallbackToken(token), 'hex');
  let found = false;
  for (const hash of hashes) {
    const expected = Buffer.from(hash, 'hex');
    // No early exit: the answer must not tell which of a run's tokens matched.
    if (expected.length === actual.length && timingSafeEqual(expected, actual)) found = true;
  }
  return found;
}

/**
 * Keeps the token a new attempt replaces: the workspace of the earlier attempt may be alive and
 * adopted by this one (same name), and its runner reports with the token it was started with.
 */
export async function rememberReplacedToken(trx: Kysely<Database>, runId: number, previousHash: string | null, now: number): Promise<void> {
  if (!previousHash) return;
  await withTokenHistory(trx)
    .insertInto('callback_token_history')
    .values({ run_id: runId, token_hash: previousHash, replaced_at: now })
    .onConflict((oc) => oc.columns(['run_id', 'token_hash']).doNothing())
    .execute();
}

export async function earlierTokenHashes(db: Kysely<Database>, runId: number): Promise<string[]> {
  const rows = await withTokenHistory(db).selectFrom('callback_token_history').select('token_hash').where('run_id', '=', runId).execute();
  return rows.map((r) => r.token_hash);
}

/** Forgets a run's earlier tokens (an operator retry starts it afresh). */
export async function forgetTokens(trx: Kysely<Database>, runIds: number | readonly number[]): Promise<void> {
  const ids = typeof runIds === 'number' ? [runIds] : runIds;
  if (ids.length === 0) return;
  await withTokenHistory(trx).deleteFrom('callback_token_history').where('run_id', 'in', ids).execute();
}

/** How a request proves it speaks for a run: its callback token, or a capability derived from one. */
export interface CallbackTokenChecks {
  /** The run whose callback token this is, or null (constant-time comparison of hashes). */
  verifyCallbackToken(runId: number, token: string): Promise<Run | null>;
  /**
   * The run when `matches` accepts one of its callback token hashes (the current attempt's or an
   * adopted earlier one's): the forge gateway's capabilities are derived from them.
   */
  verifyByTokenHash(runId: number, matches: (hash: string) => boolean): Promise<Run | null>;
}

export function createCallbackTokenChecks(db: Kysely<Database>): CallbackTokenChecks {
  /** The run's row and every hash that speaks for it: the current attempt's, then adopted earlier ones'. */
  async function runAndHashes(runId: number) {
    const row = await db.selectFrom('runs').selectAll().where('id', '=', runId).executeTakeFirst();
    if (!row?.callback_token_hash) return null;
    return { row, hashes: [row.callback_token_hash, ...(await earlierTokenHashes(db, runId))] };
  }
  return {
    async verifyCallbackToken(runId, token) {
      const found = await runAndHashes(runId);
      return found && matchesAnyHash(token, found.hashes) ? toRun(found.row) : null;
    },
    async verifyByTokenHash(runId, matches) {
      const found = await runAndHashes(runId);
      if (!found) return null;
      // Every hash is tried (no early exit): the time taken says nothing about which matched.
      let ok = false;
      for (const hash of found.hashes) ok = matches(hash) || ok;
      return ok ? toRun(found.row) : null;
    },
  };
}
