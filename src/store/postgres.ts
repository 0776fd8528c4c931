import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import type { Database as Tables } from './schema.js';

const INT8_OID = 20;
const NUMERIC_OID = 1700;

/** BIGINT columns hold epoch milliseconds and ids, all well inside Number's safe range. */
const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === INT8_OID || oid === NUMERIC_OID) return (value: string) => Number(value);
    return pg.types.getTypeParser(oid, format);
  },
};

/**
 * How long the pool waits for the database. Without them a stalled database (packets dropped, a
 * failover in progress) held every connection, and every webhook waiting for one, for as long as
 * TCP took to notice: minutes.
 */
export interface PostgresTimeouts {
  /** A new connection, or a wait for a free one. */
  connectMs: number;
  /**
   * The server cancels a statement running longer; the client gives up on an answer that has not
   * come this plus READ_MARGIN_MS later (a stalled link: the server may never have seen it) and
   * drops the connection. 0 = neither.
   */
  statementMs: number;
  /** The server ends a session idle inside a transaction this long (its locks go with it). 0 = no limit. */
  idleInTransactionMs: number;
}

export const DEFAULT_POSTGRES_TIMEOUTS: PostgresTimeouts = { connectMs: 5_000, statementMs: 30_000, idleInTransactionMs: 60_000 };

/** After statement_timeout, the server's cancellation has this long to arrive before the client gives up. */
const READ_MARGIN_MS = 5_000;

/**
 * TCP keepalive probes start after this long idle, so a connection whose peer vanished (a host
 * gone without a FIN) is found dead and replaced instead of being handed out.
 */
const KEEPALIVE_DELAY_MS = 10_000;

export interface PostgresOptions {
  url: string;
  /** Schema to use instead of `public`; tests give each suite its own. */
  schema?: string;
  poolSize?: number;
  /** @default DEFAULT_POSTGRES_TIMEOUTS */
  timeouts?: PostgresTimeouts;
}

function connectionSettings(options: PostgresOptions, limits = true) {
  const t = { ...(options.timeouts ?? DEFAULT_POSTGRES_TIMEOUTS), ...(limits ? {} : { statementMs: 0, idleInTransactionMs: 0 }) };
  return {
    connectionString: options.url,
    types,
    connectionTimeoutMillis: t.connectMs,
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_DELAY_MS,
    ...(t.statementMs > 0 ? { statement_timeout: t.statementMs, query_timeout: t.statementMs + READ_MARGIN_MS } : {}),
    ...(t.idleInTransactionMs > 0 ? { idle_in_transaction_session_timeout: t.idleInTransactionMs } : {}),
    ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}),
  };
}

/**
 * `prepared` maps the SQL text of the hot path's statements to statement names: a query with one
 * of these texts runs as a named prepared statement, parsed and planned once per connection
 * instead of at every call (node-postgres keeps track of which connection has parsed which name).
 */
export function createPgPool(options: PostgresOptions, prepared: ReadonlyMap<string, string> = new Map()): pg.Pool {
  const pool = new pg.Pool({
    ...connectionSettings(options),
    max: options.poolSize ?? 10,
    Client: preparingClient(prepared),
  });
  // A client that loses its connection emits 'error' (on the pool while idle, on the client while
  // checked out); without listeners that would crash the process. The query in flight, or the
  // next one, reports the failure instead.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}

export function createPostgresKysely(pool: pg.Pool): Kysely<Tables> {
  return new Kysely<Tables>({ dialect: new PostgresDialect({ pool }) });
}

/** A connection of its own (LISTEN): no statement limits, since it waits for notifications, but keepalive. */
export function createPgClient(options: PostgresOptions): pg.Client {
  return new pg.Client(connectionSettings(options, false));
}

/**
 * A client that turns a query whose text is in `prepared` into a named prepared statement. Kysely
 * sends every query as `query(text, values)`, so this is the one place to name them. A query
 * whose answer did not come in time (`query_timeout`) leaves node-postgres waiting on that
 * connection, and the next query sent on it would wait behind it: the connection is dropped
 * instead, so the pool replaces it.
 */
function preparingClient(prepared: ReadonlyMap<string, string>): typeof pg.Client {
  class PreparingClient extends pg.Client {}
  const query = pg.Client.prototype.query as (this: pg.Client, config: unknown, values?: unknown, callback?: unknown) => unknown;
  // Assigned rather than overridden: one implementation for all of pg's overloads.
  PreparingClient.prototype.query = function (this: pg.Client, config: unknown, values?: unknown, callback?: unknown) {
    const name = typeof config === 'string' ? prepared.get(config) : undefined;
    const result = query.call(this, name ? { name, text: config } : config, values, callback);
    if (result instanceof Promise) {
      result.catch((err: unknown) => {
        if (err instanceof Error && err.message === READ_TIMEOUT) dropConnection(this);
      });
    }
    return result;
  } as pg.Client['query'];
  return PreparingClient;
}

/** node-postgres's error for a `query_timeout`. */
const READ_TIMEOUT = 'Query read timeout';

function dropConnection(client: pg.Client): void {
  // The stream is internal to node-postgres; destroying it makes the client unusable, and the pool
  // removes an unusable client when it is released.
  const stream = (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream;
  stream?.destroy();
}
