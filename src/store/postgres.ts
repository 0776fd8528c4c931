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

export function createPgPool(options: PostgresOptions): pg.Pool {
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.poolSize ?? 10,
    types,
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
