import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import type { Database as Tables } from './schema.js';

export type SqliteSynchronous = 'NORMAL' | 'FULL';

/**
 * The database opens here, at once; Kysely's `destroy()` closes it only if a query ever ran, so
 * `close` closes it in any case (a store created and closed unused would keep the file open).
 */
export function createSqliteKysely(file: string, synchronous: SqliteSynchronous): { db: Kysely<Tables>; close(): Promise<void> } {
  if (file !== ':memory:') createPrivately(path.resolve(file));
  const raw = new Database(file);
  raw.pragma('journal_mode = WAL');
  // NORMAL in WAL mode survives a process crash (only an OS crash can lose the last commits).
  raw.pragma(`synchronous = ${synchronous}`);
  raw.pragma('busy_timeout = 5000');
  raw.pragma('foreign_keys = ON');
  const db = new Kysely<Tables>({ dialect: new SqliteDialect({ database: withStatementCache(raw) }) });
  return {
    db,
    async close() {
      await db.destroy();
      if (raw.open) raw.close();
    },
  };
}

/**
 * A new database file is made readable by baton's user only (0600), whatever the umask: it holds
 * runs, logs and token hashes. SQLite gives the WAL and shared-memory files the database file's
 * permissions (unix VFS, findCreateFileMode), so they follow. An existing file is left as it is
 * (baton warns at start when it is looser).
 */
function createPrivately(file: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  try {
    fs.closeSync(fs.openSync(file, 'wx', 0o600));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
}

/**
 * Kysely prepares every query afresh; the run engine issues the same few statements thousands of
 * times a second, so reuse prepared statements by their SQL text.
 */
function withStatementCache(raw: Database.Database): Database.Database {
  const cache = new Map<string, Database.Statement>();
  return new Proxy(raw, {
    get(target, prop, receiver) {
      if (prop === 'prepare') {
        return (source: string) => {
          let stmt = cache.get(source);
          if (!stmt) {
            stmt = target.prepare(source);
            if (cache.size < 500) cache.set(source, stmt);
          }
          return stmt;
        };
      }
      const value = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
