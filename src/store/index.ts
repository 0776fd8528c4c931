import { sql, type Kysely } from 'kysely';
import type pg from 'pg';
import { parseDatabaseUrl } from './database-url.js';
import { applyMigrations, listPendingMigrations, type MigrationResult } from './migrate.js';
import { createPgClient, createPgPool, createPostgresKysely } from './postgres.js';
import type { Database } from './schema.js';
import { createSqliteKysely, type SqliteSynchronous } from './sqlite.js';

export type { Database } from './schema.js';
export * from './schema.js';
export { isUniqueViolation, isConnectionError } from './errors.js';
export { parseDatabaseUrl, type DatabaseTarget } from './database-url.js';
export type { MigrationResult } from './migrate.js';
export { migrations, type Migration } from './migrations/index.js';

export type StoreDialect = 'sqlite' | 'postgres';

export interface StoreOptions {
  /** `sqlite:PATH` or `postgres://…`. */
  url: string;
  /** SQLite only. @default 'NORMAL' */
  sqliteSynchronous?: SqliteSynchronous;
  /** PostgreSQL only: schema to use instead of `public` (tests isolate themselves this way). */
  schema?: string;
  /** PostgreSQL only. @default 10 */
  poolSize?: number;
}

/**
 * The one database handle. Queries go through `db` (Kysely, typed by ./schema.ts); anything that
 * must be atomic goes through `transaction`.
 */
export interface Store {
  readonly dialect: StoreDialect;
  readonly db: Kysely<Database>;
  /**
   * Runs `fn` in one transaction. On SQLite it is `BEGIN IMMEDIATE`: the single writer lock is
   * taken up front, which is what makes read-then-write claims atomic across processes.
   */
  transaction<T>(fn: (trx: Kysely<Database>) => Promise<T>): Promise<T>;
  migrate(): Promise<MigrationResult>;
  pendingMigrations(): Promise<string[]>;
  /** Throws when the database cannot answer. */
  ping(): Promise<void>;
  /**
   * Tells other processes sharing the database that something changed (PostgreSQL `NOTIFY`,
   * delivered at commit). Every NOTIFY takes a database-wide lock at commit: send at most one per
   * transaction. A no-op on SQLite, where one process owns the file.
   */
  notify(trx: Kysely<Database>, channel: string, payload?: string): Promise<void>;
  /**
   * Calls `onMessage` with the payload of every notification on `channel` from any process, and
   * with `null` after a reconnect (notifications sent meanwhile are lost, so listeners should
   * catch up). Resolves to a function that stops listening.
   */
  listen(channel: string, onMessage: (payload: string | null) => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

export function createStore(options: StoreOptions): Store {
  const target = parseDatabaseUrl(options.url);
  if ('error' in target) throw new Error(`DATABASE_URL ${target.error}, got "${options.url}"`);
  return target.kind === 'sqlite'
    ? createSqliteStore(target.file, options.sqliteSynchronous ?? 'NORMAL')
    : createPostgresStore({ url: target.url, schema: options.schema, poolSize: options.poolSize });
}

function createSqliteStore(file: string, synchronous: SqliteSynchronous): Store {
  const { db, close } = createSqliteKysely(file, synchronous);
  type Waiting = { fn: (trx: Kysely<Database>) => Promise<unknown>; resolve: (v: unknown) => void; reject: (e: unknown) => void };
  const waiting: Waiting[] = [];
  let draining = false;
  /**
   * Group commit: transactions that queue up while one is running share the next BEGIN…COMMIT,
   * each inside its own SAVEPOINT (its failure rolls back only its own writes). The one
   * connection serialises them anyway; sharing the commit shares its WAL write (and fsync on FULL).
   * Every caller still resolves only after the COMMIT that made its writes durable.
   */
  const drain = async (): Promise<void> => {
    draining = true;
    while (waiting.length > 0) {
      const batch = waiting.splice(0, 256);
      const outcomes: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = [];
      try {
        await db.connection().execute(async (conn) => {
          await sql`BEGIN IMMEDIATE`.execute(conn);
          try {
            // A caller alone in its batch needs no savepoint: its failure rolls back the whole.
            const alone = batch.length === 1;
            for (const item of batch) {
              if (!alone) await sql`SAVEPOINT grouped`.execute(conn);
              try {
                const value = await item.fn(conn);
                if (!alone) await sql`RELEASE grouped`.execute(conn);
                outcomes.push({ ok: true, value });
              } catch (error) {
                if (alone) throw error;
                await sql`ROLLBACK TO grouped`.execute(conn);
                await sql`RELEASE grouped`.execute(conn);
                outcomes.push({ ok: false, error });
              }
            }
            await sql`COMMIT`.execute(conn);
          } catch (err) {
            await sql`ROLLBACK`.execute(conn).catch(() => {});
            throw err;
          }
        });
        batch.forEach((item, i) => {
          const o = outcomes[i]!;
          if (o.ok) item.resolve(o.value);
          else item.reject(o.error);
        });
      } catch (err) {
        for (const item of batch) item.reject(err);
      }
    }
    draining = false;
  };
  const transaction = <T>(fn: (trx: Kysely<Database>) => Promise<T>): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      waiting.push({ fn, resolve: resolve as (v: unknown) => void, reject });
      if (!draining) void drain();
    });
  return {
    dialect: 'sqlite',
    db,
    transaction,
    migrate: () => applyMigrations(db, 'sqlite', transaction),
    pendingMigrations: () => listPendingMigrations(db, 'sqlite'),
    ping: async () => {
      await sql`SELECT 1`.execute(db);
    },
    notify: async () => {},
    listen: async () => async () => {},
    close: once(close),
  };
}

function createPostgresStore(options: { url: string; schema?: string; poolSize?: number }): Store {
  const pool = createPgPool(options);
  const db = createPostgresKysely(pool);
  const transaction = <T>(fn: (trx: Kysely<Database>) => Promise<T>): Promise<T> => db.transaction().execute(fn);
  const listeners = new Set<() => Promise<void>>();
  return {
    dialect: 'postgres',
    db,
    transaction,
    migrate: () => applyMigrations(db, 'postgres', transaction),
    pendingMigrations: () => listPendingMigrations(db, 'postgres'),
    ping: async () => {
      await sql`SELECT 1`.execute(db);
    },
    notify: async (trx, channel, payload = '') => {
      await sql`SELECT pg_notify(${channel}, ${payload})`.execute(trx);
    },
    listen: async (channel, onMessage) => {
      const stop = await listenWithReconnect(options, channel, onMessage);
      listeners.add(stop);
      return async () => {
        listeners.delete(stop);
        await stop();
      };
    },
    close: once(async () => {
      await Promise.all([...listeners].map((stop) => stop()));
      await db.destroy();
    }),
  };
}

/**
 * A dedicated connection that LISTENs. When it drops, it reconnects with backoff and calls
 * `onMessage` once, because notifications sent while it was away are lost.
 */
async function listenWithReconnect(
  options: { url: string; schema?: string },
  channel: string,
  onMessage: (payload: string | null) => void,
): Promise<() => Promise<void>> {
  let stopped = false;
  let client: pg.Client | undefined;
  let retryTimer: NodeJS.Timeout | undefined;
  let delay = 250;
  const quoted = `"${channel.replace(/"/g, '""')}"`;

  const connect = async (): Promise<void> => {
    const next = createPgClient(options);
    next.on('notification', (message) => onMessage(message.payload ?? ''));
    next.on('error', () => (client === next ? scheduleReconnect() : undefined));
    next.on('end', () => (client === next ? scheduleReconnect() : undefined));
    try {
      await next.connect();
    } catch (err) {
      next.removeAllListeners();
      next.on('error', () => {});
      await next.end().catch(() => {});
      throw err;
    }
    await next.query(`LISTEN ${quoted}`);
    client = next;
    delay = 250;
  };
  const scheduleReconnect = (): void => {
    if (stopped || retryTimer) return;
    client?.removeAllListeners();
    client?.on('error', () => {});
    client?.end().catch(() => {});
    client = undefined;
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      connect().then(
        () => onMessage(null),
        () => {
          delay = Math.min(delay * 2, 10_000);
          scheduleReconnect();
        },
      );
    }, delay);
    retryTimer.unref();
  };

  await connect();
  return async () => {
    stopped = true;
    if (retryTimer) clearTimeout(retryTimer);
    const current = client;
    client = undefined;
    current?.removeAllListeners();
    current?.on('error', () => {});
    await current?.end().catch(() => {});
  };
}

function once(fn: () => Promise<void>): () => Promise<void> {
  let pending: Promise<void> | undefined;
  return () => (pending ??= fn());
}
