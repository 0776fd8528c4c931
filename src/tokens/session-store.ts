import { randomBytes } from 'node:crypto';
import type { Store } from '../store/index.js';
import { withSessionsTable } from './sessions-table.js';
import { hashToken, toToken, type ApiToken } from './token-store.js';

/** How long a dashboard session lasts. */
export interface SessionLifetime {
  /** Ends after this long without a request. */
  idleMs: number;
  /** Ends this long after login, however active. */
  maxAgeMs: number;
}

export interface DashboardSession {
  id: number;
  /** The live API token the session was made with (its scope is the session's). */
  token: ApiToken;
  createdAt: number;
  /** The earlier of the absolute end and the idle end as of this request. */
  expiresAt: number;
}

export interface SessionStore {
  /** A new session for `token`; `sessionId` is what the cookie carries, shown only now. */
  create(token: ApiToken): Promise<{ sessionId: string; session: DashboardSession }>;
  /**
   * The live session this id names, or null (unknown, expired, logged out, or its token revoked).
   * A request counts as activity (`touch`, default true); a re-check of an open stream does not.
   */
  verify(sessionId: string, options?: { touch?: boolean }): Promise<DashboardSession | null>;
  /** Ends the session (logout); false when it was not live. */
  revoke(sessionId: string): Promise<boolean>;
  /** Deletes ended sessions; returns how many. */
  prune(): Promise<number>;
}

export interface SessionStoreOptions {
  store: Store;
  lifetime: SessionLifetime;
  /** @default Date.now */
  now?: () => number;
  /** @default crypto.randomBytes */
  random?: (size: number) => Buffer;
}

/**
 * Server-side dashboard sessions. The id is 32 random bytes; only its SHA-256 is stored, so a copy
 * of the database does not hold a usable cookie. Every check joins the session's token: revoking
 * the token ends its sessions at once.
 */
export function createSessionStore(options: SessionStoreOptions): SessionStore {
  const db = withSessionsTable(options.store.db);
  const { idleMs, maxAgeMs } = options.lifetime;
  const now = options.now ?? Date.now;
  const random = options.random ?? randomBytes;
  // Activity is written at most this often: one write a minute, not one per request, while
  // keeping the idle end accurate to a tenth of its length.
  const seenResolutionMs = Math.min(60_000, Math.floor(idleMs / 10));

  return {
    async create(token) {
      const sessionId = random(32).toString('base64url');
      const t = now();
      const row = await db
        .insertInto('dashboard_sessions')
        .values({
          session_hash: hashToken(sessionId),
          token_id: token.id,
          created_at: t,
          last_seen_at: t,
          expires_at: t + maxAgeMs,
          revoked_at: null,
        })
        .returning(['id', 'created_at', 'expires_at'])
        .executeTakeFirstOrThrow();
      return { sessionId, session: { id: row.id, token, createdAt: row.created_at, expiresAt: Math.min(row.expires_at, t + idleMs) } };
    },

    async verify(sessionId, verifyOptions = {}) {
      if (typeof sessionId !== 'string' || sessionId.length === 0 || sessionId.length > 256) return null;
      const row = await db
        .selectFrom('dashboard_sessions as s')
        .innerJoin('api_tokens as t', 't.id', 's.token_id')
        .select([
          's.id as session_id',
          's.created_at as session_created_at',
          's.last_seen_at',
          's.expires_at',
          's.revoked_at as session_revoked_at',
          't.id',
          't.name',
          't.hint',
          't.scope',
          't.created_at',
          't.last_used_at',
          't.revoked_at',
        ])
        .where('s.session_hash', '=', hashToken(sessionId))
        .executeTakeFirst();
      const t = now();
      if (!row || row.session_revoked_at !== null || row.revoked_at !== null) return null;
      if (t >= row.expires_at || t >= row.last_seen_at + idleMs) return null;
      let lastSeen = row.last_seen_at;
      if (verifyOptions.touch !== false && t - lastSeen >= seenResolutionMs) {
        // Best effort, like a token's last use: a database that cannot take writes (a full disk)
        // shortens the idle end at worst, it never locks the operator out.
        const written = await db
          .updateTable('dashboard_sessions')
          .set({ last_seen_at: t })
          .where('id', '=', row.session_id)
          .execute()
          .then(
            () => true,
            () => false,
          );
        if (written) lastSeen = t;
      }
      return {
        id: row.session_id,
        token: toToken(row),
        createdAt: row.session_created_at,
        expiresAt: Math.min(row.expires_at, lastSeen + idleMs),
      };
    },

    async revoke(sessionId) {
      if (typeof sessionId !== 'string' || sessionId.length === 0 || sessionId.length > 256) return false;
      const result = await db
        .updateTable('dashboard_sessions')
        .set({ revoked_at: now() })
        .where('session_hash', '=', hashToken(sessionId))
        .where('revoked_at', 'is', null)
        .executeTakeFirst();
      return Number(result.numUpdatedRows) > 0;
    },

    async prune() {
      const t = now();
      const result = await db
        .deleteFrom('dashboard_sessions')
        .where((eb) => eb.or([eb('expires_at', '<=', t), eb('last_seen_at', '<=', t - idleMs), eb('revoked_at', 'is not', null)]))
        .executeTakeFirst();
      return Number(result.numDeletedRows);
    },
  };
}
