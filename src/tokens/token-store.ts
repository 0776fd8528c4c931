import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { isUniqueViolation, type Store } from '../store/index.js';
import { withSessionsTable } from './sessions-table.js';

/** Every token starts with this, so a leaked one is recognisable in a paste or a secret scanner. */
export const TOKEN_PREFIX = 'baton_';

/** Characters of a token kept in clear (prefix included) so listings can tell tokens apart. */
const HINT_LENGTH = TOKEN_PREFIX.length + 4;

/** A last-used time only this stale is rewritten: one write a minute per token, not one per request. */
const LAST_USED_RESOLUTION_MS = 60_000;

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/**
 * What a token may do, each including the one before: `read` (GET only), `operate` (also the
 * operator actions: retry, cancel, pause, resume, replay, run submission), `submit:arguments`
 * (also submissions with `arguments`, text that goes into the agent's prompt as is), `admin`
 * (also token management). Tokens made before scopes existed are `admin`.
 */
export const TOKEN_SCOPES = ['read', 'operate', 'submit:arguments', 'admin'] as const;
export type TokenScope = (typeof TOKEN_SCOPES)[number];

/** Whether a token of scope `held` may do what needs `needed`. */
export function scopeAllows(held: TokenScope, needed: TokenScope): boolean {
  return TOKEN_SCOPES.indexOf(held) >= TOKEN_SCOPES.indexOf(needed);
}

export function isTokenScope(value: unknown): value is TokenScope {
  return typeof value === 'string' && (TOKEN_SCOPES as readonly string[]).includes(value);
}

export interface ApiToken {
  id: number;
  name: string;
  scope: TokenScope;
  /**
   * The token's first characters, e.g. `baton_Ab3x`, to tell minted tokens apart in listings;
   * null for a token the operator supplied (`BATON_BOOTSTRAP_TOKEN`), of which nothing is kept.
   */
  hint: string | null;
  createdAt: number;
  lastUsedAt: number | null;
  revokedAt: number | null;
}

/** The one moment a token exists in clear: returned by `create`, never stored or shown again. */
export interface MintedToken extends ApiToken {
  token: string;
}

/** Bad input to a token operation (name taken, unknown token); the message names the input. */
export class TokenError extends Error {
  constructor(
    message: string,
    readonly code: 'invalid' | 'conflict' | 'not_found',
  ) {
    super(message);
    this.name = 'TokenError';
  }
}

export interface TokenStoreOptions {
  store: Store;
  /** @default Date.now */
  now?: () => number;
  /** @default crypto.randomBytes */
  random?: (size: number) => Buffer;
}

export interface TokenStore {
  /** Mints a token named `name` (unique among live tokens) with `scope`. @default scope 'read' */
  create(name: string, scope?: TokenScope): Promise<MintedToken>;
  /** Every token, revoked ones included, oldest first. */
  list(): Promise<ApiToken[]>;
  /**
   * Revokes by numeric id or by name, and ends every dashboard session made with it, in one
   * transaction; it takes effect on the next request (and open event streams close).
   */
  revoke(idOrName: string): Promise<ApiToken>;
  /** The live token this is, or null (wrong, revoked or malformed: callers must not say which). */
  verify(token: string): Promise<ApiToken | null>;
  /**
   * On a database without tokens, stores `given` (or a fresh token) as `admin` (scope admin) and
   * returns it in clear exactly once; null when tokens already exist. Of a given token only the
   * hash is kept (no hint: the operator chose it, and its first characters may be shared with
   * other secrets). Two replicas starting together: only one wins the unique name, the other gets null.
   */
  bootstrap(given?: string): Promise<MintedToken | null>;
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

export function createTokenStore(options: TokenStoreOptions): TokenStore {
  const { store } = options;
  const now = options.now ?? Date.now;
  const random = options.random ?? randomBytes;

  const mint = (): string => TOKEN_PREFIX + random(32).toString('base64url');

  async function insert(name: string, token: string, scope: TokenScope, keepHint: boolean): Promise<MintedToken> {
    const t = now();
    try {
      const row = await store.db
        .insertInto('api_tokens')
        .values({
          name,
          token_hash: hashToken(token),
          // Empty: nothing of the token is kept (the column predates supplied tokens).
          hint: keepHint ? token.slice(0, HINT_LENGTH) : '',
          scope,
          created_at: t,
          last_used_at: null,
          revoked_at: null,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      return { ...toToken(row), token };
    } catch (err) {
      if (isUniqueViolation(err))
        throw new TokenError(`a live token named "${name}" already exists; revoke it first or pick another name`, 'conflict');
      throw err;
    }
  }

  return {
    async create(name, scope = 'read') {
      if (!isTokenScope(scope))
        throw new TokenError(`token scope must be one of ${TOKEN_SCOPES.join(', ')}, got "${String(scope).slice(0, 20)}"`, 'invalid');
      if (!NAME.test(name)) {
        throw new TokenError(
          `token name must be 1-64 letters, digits, ".", "_" or "-", starting with a letter or digit, got "${name.slice(0, 64)}"`,
          'invalid',
        );
      }
      return insert(name, mint(), scope, true);
    },

    async list() {
      const rows = await store.db.selectFrom('api_tokens').selectAll().orderBy('id').execute();
      return rows.map(toToken);
    },

    async revoke(idOrName) {
      return store.transaction(async (trx) => {
        const t = now();
        let query = trx.updateTable('api_tokens').set({ revoked_at: t }).where('revoked_at', 'is', null);
        query = /^\d+$/.test(idOrName) ? query.where('id', '=', Number(idOrName)) : query.where('name', '=', idOrName);
        const row = await query.returningAll().executeTakeFirst();
        if (!row) throw new TokenError(`no live token with id or name "${idOrName.slice(0, 64)}"`, 'not_found');
        // Sessions check their token's revocation on every request anyway; ending them here
        // makes it visible in the table too, and a later un-revoke (there is none) could not revive them.
        await withSessionsTable(trx)
          .updateTable('dashboard_sessions')
          .set({ revoked_at: t })
          .where('token_id', '=', row.id)
          .where('revoked_at', 'is', null)
          .execute();
        return toToken(row);
      });
    },

    async verify(token) {
      if (typeof token !== 'string' || token.length === 0 || token.length > 512) return null;
      const digest = hashToken(token);
      const row = await store.db.selectFrom('api_tokens').selectAll().where('token_hash', '=', digest).executeTakeFirst();
      // The lookup is by digest (an index can't be constant-time); the final check is, so no
      // timing difference depends on how much of a guessed token was right.
      if (!row || !timingSafeEqual(Buffer.from(row.token_hash, 'hex'), Buffer.from(digest, 'hex'))) return null;
      if (row.revoked_at !== null) return null;
      const t = now();
      if (row.last_used_at === null || t - row.last_used_at > LAST_USED_RESOLUTION_MS) {
        // Best effort: the last-use time only informs listings, and a database that cannot take
        // writes (a full disk) must not lock operators out of /ready and the API.
        const written = await store.db
          .updateTable('api_tokens')
          .set({ last_used_at: t })
          .where('id', '=', row.id)
          .execute()
          .then(
            () => true,
            () => false,
          );
        if (written) row.last_used_at = t;
      }
      return toToken(row);
    },

    async bootstrap(given) {
      const existing = await store.db.selectFrom('api_tokens').select('id').limit(1).executeTakeFirst();
      if (existing) return null;
      try {
        return await insert('admin', given ?? mint(), 'admin', given === undefined);
      } catch (err) {
        if (err instanceof TokenError && err.code === 'conflict') return null;
        throw err;
      }
    },
  };
}

export function toToken(row: {
  id: number;
  name: string;
  hint: string;
  scope: string;
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
}): ApiToken {
  return {
    id: row.id,
    name: row.name,
    // An unknown scope (written by a newer baton) is the least one, never more than it says.
    scope: isTokenScope(row.scope) ? row.scope : 'read',
    hint: row.hint === '' ? null : row.hint,
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at,
    revokedAt: row.revoked_at,
  };
}
