import path from 'node:path';
import { leaf, invalid, mapping, number, oneOf, section, type ResolveContext } from '../config-schema/index.js';
import { parseDatabaseUrl } from './database-url.js';
import type { PostgresTimeouts } from './postgres.js';
import type { SqliteSynchronous } from './sqlite.js';

export interface DatabaseSettings {
  /** `sqlite:PATH` or `postgres://…`. */
  url: string;
  sqliteSynchronous: SqliteSynchronous;
  /** PostgreSQL only: how long the pool waits for the database before it gives up. */
  timeouts: PostgresTimeouts;
}

const ms = (seconds: number) => Math.round(seconds * 1000);

/** `database:` in baton.yaml. */
export const databaseSection = section(
  mapping({
    url: leaf<string>({
      env: 'DATABASE_URL',
      // The URL of a PostgreSQL database carries its password.
      sensitive: 'credentials',
      doc: 'sqlite:PATH (relative or absolute) or postgres://… / postgresql://… to share the queue between replicas; default sqlite:DATA_DIR/baton.db',
      parse: (raw) => {
        if (typeof raw !== 'string' || 'error' in parseDatabaseUrl(raw))
          return invalid('must be sqlite:PATH, postgres://… or postgresql://…');
        return raw;
      },
    }),
    sqliteSynchronous: oneOf(['NORMAL', 'FULL'], {
      env: 'SQLITE_SYNCHRONOUS',
      default: 'NORMAL',
      doc: 'NORMAL survives a process crash (WAL); FULL also an OS crash, slower',
    }),
    connectTimeoutSeconds: number({
      env: 'DATABASE_CONNECT_TIMEOUT_SECONDS',
      min: 0.1,
      default: 5,
      doc: 'PostgreSQL: a new connection (or a wait for a free one in the pool) that takes longer fails',
    }),
    statementTimeoutSeconds: number({
      env: 'DATABASE_STATEMENT_TIMEOUT_SECONDS',
      min: 0,
      default: 30,
      doc: 'PostgreSQL: a statement running longer is cancelled by the server, and one whose answer does not come within this plus 5 s (a stalled link) drops its connection; 0 = no limit (a long migration)',
    }),
    idleInTransactionTimeoutSeconds: number({
      min: 0,
      default: 60,
      doc: 'PostgreSQL: a session idle inside a transaction this long is ended by the server, so its locks go; 0 = no limit',
    }),
  }),
  (values, ctx: ResolveContext<{ dataDir: string }>): DatabaseSettings => ({
    // The default database lives in the data directory, so BATON_DATA_DIR moves it too.
    url: values.url ?? `sqlite:${path.join(ctx.deps.dataDir, 'baton.db')}`,
    sqliteSynchronous: values.sqliteSynchronous,
    timeouts: {
      connectMs: ms(values.connectTimeoutSeconds),
      statementMs: ms(values.statementTimeoutSeconds),
      idleInTransactionMs: ms(values.idleInTransactionTimeoutSeconds),
    },
  }),
);
