import { CompiledQuery, sql, type Kysely } from 'kysely';
import type pg from 'pg';
import { maskUrlCredentials } from '../config-schema/index.js';
import { BACKOFF, backoffDelay, consoleLogger, type BackgroundLogger } from '../background/index.js';
import { parseDatabaseUrl } from './database-url.js';
import { applyMigrations, listPendingMigrations, type MigrationResult } from './migrate.js';
import { createPgClient, createPgPool, createPostgresKysely, type PostgresOptions, type PostgresTimeouts } from './postgres.js';
import type { Database } from './schema.js';
import { createSqliteKysely, type SqliteSynchronous } from './sqlite.js';

export type { Database } from './schema.js';
export * from './schema.js';
export { isUniqueViolation, isConnectionError, isPermanentDatabaseError } from './errors.js';
export { parseDatabaseUrl, type DatabaseTarget } from './database-url.js';
export type { MigrationResult } from './migrate.js';
export { DEFAULT_POSTGRES_TIMEOUTS, type PostgresTimeouts } from './postgres.js';
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
  /** PostgreSQL only. @default DEFAULT_POSTGRES_TIMEOUTS */
  timeouts?: PostgresTimeouts;
  /** Where a failing after-commit effect is reported. @default one line on stderr */
  logger?: BackgroundLogger;
}

/** A transaction in progress: its queries, and what is to happen once it has committed. */
export interface TransactionScope {
  readonly trx: Kysely<Database>;
  /**
   * Runs `effect` once the transaction has committed, in the order registered, and never when it
   * rolls back: a worker woken for a row that was never committed would look in vain, and a
   * listener told of it would believe something that did not happen. Effects are signals (wake a
   * worker, NOTIFY other replicas, tell local listeners); one that throws is logged and cannot
   * undo the commit.
   */
  afterCommit(effect: () => void): void;
}

/** Where effects are registered: a transaction's scope, or a single statement's (`runStatement`). */
export type EffectScope = Pick<TransactionScope, 'afterCommit'>;

/**
 * A fixed statement that the run engine's hot path issues thousands of times a second. On
 * PostgreSQL it runs as a named prepared statement, parsed and planned once per connection; on
 * SQLite the statement cache keeps it prepared.
 */
export interface PreparedStatement<R> {
  readonly text: string;
  /** Runs it on `db` (then it is a transaction of its own) or on a transaction's `trx`. */
  execute(on: Kysely<Database>, values: readonly unknown[]): Promise<R[]>;
}

/**
 * The one database handle. Queries go through `db` (Kysely, typed by ./schema.ts); anything that
 * must be atomic goes through `transaction`.
 */
export interface Store {
  readonly dialect: StoreDialect;
  readonly db: Kysely<Database>;
  /**
   * Runs `fn` in one transaction; `scope.afterCommit` effects run once it has committed. On SQLite
   * it is `BEGIN IMMEDIATE`: the single writer lock is taken up front, which is what makes
   * read-then-write claims atomic across processes.
   */
  transaction<T>(fn: (trx: Kysely<Database>, scope: TransactionScope) => Promise<T>): Promise<T>;
  /**
   * Prepares `text`, written with `?` placeholders for both dialects (PostgreSQL gets them
   * numbered, `$1`…; text numbered already is kept), and no other `?`. List result columns by
   * name, never `*`: on PostgreSQL a prepared statement whose result columns change (a column
   * added by another replica's migration) fails instead of being planned again.
   */
  prepare<R>(text: string): PreparedStatement<R>;
  /**
   * Runs one statement as a transaction of its own, then `then` with its rows; effects `then`
   * registers run as soon as it returns (the statement has committed by then). On PostgreSQL that
   * is one round trip instead of BEGIN, statement, COMMIT, and as atomic, because a single
   * statement (data-modifying CTEs included) is. On SQLite it runs inside `transaction`.
   */
  runStatement<R, T>(statement: PreparedStatement<R>, values: readonly unknown[], then: (rows: R[], scope: EffectScope) => T): Promise<T>;
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
  if ('error' in target) throw new Error(`DATABASE_URL ${target.error}, got "${maskUrlCredentials(options.url)}"`);
  const effects = createEffectRunner(options.logger ?? consoleLogger);
  return target.kind === 'sqlite'
    ? createSqliteStore(target.file, options.sqliteSynchronous ?? 'NORMAL', effects)
    : createPostgresStore({ url: target.url, schema: options.schema, poolSize: options.poolSize, timeouts: options.timeouts }, effects);
}

type TransactionBody<T> = (trx: Kysely<Database>, scope: TransactionScope) => Promise<T>;

function preparedStatement<R>(text: string): PreparedStatement<R> {
  return {
    text,
    async execute(on, values) {
      return (await on.executeQuery<R>(CompiledQuery.raw(text, [...values]))).rows;
    },
  };
}

interface EffectRunner {
  /** A scope over `trx` whose effects are collected in `effects`; closed once `run` or `discard` is called. */
  scope(trx: Kysely<Database>): { scope: TransactionScope; run(): void; discard(): void };
}

function createEffectRunner(logger: BackgroundLogger): EffectRunner {
  return {
    scope(trx) {
      let effects: Array<() => void> | null = [];
      const close = () => {
        const pending = effects ?? [];
        effects = null;
        return pending;
      };
      return {
        scope: {
          trx,
          afterCommit(effect) {
            if (!effects) throw new Error('afterCommit called after its transaction ended');
            effects.push(effect);
          },
        },
        run() {
          for (const effect of close()) {
            try {
              effect();
            } catch (err) {
              logger.error({ err }, 'an after-commit effect failed (the transaction did commit)');
            }
          }
        },
        discard() {
          close();
        },
      };
    },
  };
}

/** Compiled once: a grouped commit issues these for every caller in it. */
const BEGIN_IMMEDIATE = CompiledQuery.raw('BEGIN IMMEDIATE');
const SAVEPOINT = CompiledQuery.raw('SAVEPOINT grouped');
const RELEASE = CompiledQuery.raw('RELEASE grouped');
const ROLLBACK_TO = CompiledQuery.raw('ROLLBACK TO grouped');
const COMMIT = CompiledQuery.raw('COMMIT');
const ROLLBACK = CompiledQuery.raw('ROLLBACK');

function createSqliteStore(file: string, synchronous: SqliteSynchronous, effects: EffectRunner): Store {
  const { db, close } = createSqliteKysely(file, synchronous);
  type Waiting = { fn: TransactionBody<unknown>; resolve: (v: unknown) => void; reject: (e: unknown) => void };
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
      const outcomes: Array<{ ok: true; value: unknown; effects: () => void } | { ok: false; error: unknown }> = [];
      try {
        await db.connection().execute(async (conn) => {
          await conn.executeQuery(BEGIN_IMMEDIATE);
          try {
            // A caller alone in its batch needs no savepoint: its failure rolls back the whole.
            const alone = batch.length === 1;
            for (const item of batch) {
              if (!alone) await conn.executeQuery(SAVEPOINT);
              // Each caller has its own effects: one rolled back to its savepoint drops only its own.
              const own = effects.scope(conn);
              try {
                const value = await item.fn(conn, own.scope);
                if (!alone) await conn.executeQuery(RELEASE);
                outcomes.push({ ok: true, value, effects: own.run });
              } catch (error) {
                own.discard();
                if (alone) throw error;
                await conn.executeQuery(ROLLBACK_TO);
                await conn.executeQuery(RELEASE);
                outcomes.push({ ok: false, error });
              }
            }
            await conn.executeQuery(COMMIT);
          } catch (err) {
            await conn.executeQuery(ROLLBACK).catch(() => {});
            throw err;
          }
        });
        batch.forEach((item, i) => {
          const o = outcomes[i]!;
          if (o.ok) {
            o.effects();
            item.resolve(o.value);
          } else item.reject(o.error);
        });
      } catch (err) {
        for (const item of batch) item.reject(err);
      }
    }
    draining = false;
  };
  const transaction = <T>(fn: TransactionBody<T>): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      waiting.push({ fn: fn as TransactionBody<unknown>, resolve: resolve as (v: unknown) => void, reject });
      if (!draining) void drain();
    });
  return {
    dialect: 'sqlite',
    db,
    transaction,
    // Kysely prepares through the statement cache (sqlite.ts), keyed by text: nothing to register.
    prepare: preparedStatement,
    runStatement: (statement, values, then) => transaction(async (trx, scope) => then(await statement.execute(trx, values), scope)),
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

/**
 * The channel a name stands for in the connection's schema: the name itself in `public`, and
 * suffixed with a digest of the schema in any other (a channel is database-wide, and two batons
 * may share a database in schemas of their own; 63 bytes at most, as an identifier).
 */
const SCHEMA_CHANNEL = `CASE WHEN coalesce(current_schema(), 'public') = 'public' THEN $1::text ELSE $1::text || '.' || left(md5(current_schema()), 16) END`;
const NOTIFY = `SELECT pg_notify(${SCHEMA_CHANNEL}, $2)`;

/** The channel `LISTEN` must name to hear `notify(…, channel)` of stores in the client's schema. */
export async function schemaChannel(client: Pick<pg.Client, 'query'>, channel: string): Promise<string> {
  const { rows } = await client.query<{ channel: string }>(`SELECT ${SCHEMA_CHANNEL} AS channel`, [channel]);
  return rows[0]!.channel;
}

/** `?` → `$1`, `$2`… (see `Store.prepare`). */
function numberPlaceholders(text: string): string {
  let n = 0;
  return text.replace(/\?/g, () => `$${++n}`);
}

function createPostgresStore(options: PostgresOptions, effects: EffectRunner): Store {
  // Named once per connection: replicas are hinted after most commits.
  const prepared = new Map<string, string>([[NOTIFY, 'baton_notify']]);
  const pool = createPgPool(options, prepared);
  const db = createPostgresKysely(pool);
  const transaction = async <T>(fn: TransactionBody<T>): Promise<T> => {
    let scoped: ReturnType<EffectRunner['scope']> | undefined;
    try {
      const result = await db.transaction().execute((trx) => {
        scoped = effects.scope(trx);
        return fn(trx, scoped.scope);
      });
      scoped?.run();
      return result;
    } finally {
      scoped?.discard();
    }
  };
  const listeners = new Set<() => Promise<void>>();
  return {
    dialect: 'postgres',
    db,
    transaction,
    prepare(text) {
      const numbered = numberPlaceholders(text);
      if (!prepared.has(numbered)) prepared.set(numbered, `baton_${prepared.size + 1}`);
      return preparedStatement(numbered);
    },
    async runStatement(statement, values, then) {
      const rows = await statement.execute(db, values);
      const scoped = effects.scope(db);
      try {
        const result = then(rows, scoped.scope);
        scoped.run();
        return result;
      } finally {
        scoped.discard();
      }
    },
    migrate: () => applyMigrations(db, 'postgres', transaction),
    pendingMigrations: () => listPendingMigrations(db, 'postgres'),
    ping: async () => {
      await sql`SELECT 1`.execute(db);
    },
    notify: async (trx, channel, payload = '') => {
      await trx.executeQuery(CompiledQuery.raw(NOTIFY, [channel, payload]));
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
  options: PostgresOptions,
  channel: string,
  onMessage: (payload: string | null) => void,
): Promise<() => Promise<void>> {
  let stopped = false;
  let client: pg.Client | undefined;
  let retryTimer: NodeJS.Timeout | undefined;
  let failures = 0;

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
    const scoped = await schemaChannel(next, channel);
    await next.query(`LISTEN "${scoped.replace(/"/g, '""')}"`);
    client = next;
    failures = 0;
  };
  const scheduleReconnect = (): void => {
    if (stopped || retryTimer) return;
    client?.removeAllListeners();
    client?.on('error', () => {});
    client?.end().catch(() => {});
    client = undefined;
    retryTimer = setTimeout(
      () => {
        retryTimer = undefined;
        connect().then(
          () => onMessage(null),
          () => {
            failures += 1;
            scheduleReconnect();
          },
        );
      },
      backoffDelay(BACKOFF.listen, failures + 1),
    );
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
export { databaseSection, type DatabaseSettings } from './config-section.js';
