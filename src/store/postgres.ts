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

export interface PostgresOptions {
  url: string;
  /** Schema to use instead of `public`; tests give each suite its own. */
  schema?: string;
  poolSize?: number;
}

/**
 * `prepared` maps the SQL text of the hot path's statements to statement names: a query with one
 * of these texts runs as a named prepared statement, parsed and planned once per connection
 * instead of at every call (node-postgres keeps track of which connection has parsed which name).
 */
export function createPgPool(options: PostgresOptions, prepared: ReadonlyMap<string, string> = new Map()): pg.Pool {
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.poolSize ?? 10,
    types,
    Client: preparingClient(prepared),
    connectionTimeoutMillis: 10_000,
    ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}),
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

export function createPgClient(options: PostgresOptions): pg.Client {
  return new pg.Client({
    connectionString: options.url,
    types,
    ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}),
  });
}

/**
 * A client that turns a query whose text is in `prepared` into a named prepared statement. Kysely
 * sends every query as `query(text, values)`, so this is the one place to name them.
 */
function preparingClient(prepared: ReadonlyMap<string, string>): typeof pg.Client {
  class PreparingClient extends pg.Client {}
  const query = pg.Client.prototype.query as (this: pg.Client, config: unknown, values?: unknown, callback?: unknown) => unknown;
  // Assigned rather than overridden: one implementation for all of pg's overloads.
  PreparingClient.prototype.query = function (this: pg.Client, config: unknown, values?: unknown, callback?: unknown) {
    const name = typeof config === 'string' ? prepared.get(config) : undefined;
    return query.call(this, name ? { name, text: config } : config, values, callback);
  } as pg.Client['query'];
  return PreparingClient;
}
