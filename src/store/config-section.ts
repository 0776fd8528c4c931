import path from 'node:path';
import { leaf, invalid, mapping, oneOf, section, type ResolveContext } from '../config-schema/index.js';
import { parseDatabaseUrl } from './database-url.js';
import type { SqliteSynchronous } from './sqlite.js';

export interface DatabaseSettings {
  /** `sqlite:PATH` or `postgres://…`. */
  url: string;
  sqliteSynchronous: SqliteSynchronous;
}

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
  }),
  (values, ctx: ResolveContext<{ dataDir: string }>): DatabaseSettings => ({
    // The default database lives in the data directory, so BATON_DATA_DIR moves it too.
    url: values.url ?? `sqlite:${path.join(ctx.deps.dataDir, 'baton.db')}`,
    sqliteSynchronous: values.sqliteSynchronous,
  }),
);
