import fs from 'node:fs';
import type { Config } from '../server/index.js';
import { maskUrlCredentials } from '../config-schema/index.js';
import { createStore, migrations, parseDatabaseUrl, type Store } from '../store/index.js';

/** The database a command reads is not there: it names where it looked and what to do. */
export class NoDatabaseError extends Error {
  override name = 'NoDatabaseError';
}

const FIX =
  'run the command in the directory baton serve runs in, or set DATABASE_URL (or BATON_DATA_DIR) as baton serve has it; ' +
  'only baton serve and baton migrate create a database. See docs/troubleshooting.md#no-database';

/**
 * Opens the store of a command that reads and writes an existing database (`baton token`): it
 * never creates one. Opening a SQLite file that is not there would create a fresh, empty database
 * in the wrong place, and a token minted there is refused by the real server. A PostgreSQL
 * database without baton's tables is refused the same way. Pending migrations of a database that
 * has baton's tables are applied, as before.
 */
export async function openExistingStore(config: Config, cwd = process.cwd()): Promise<Store> {
  const url = config.database.url;
  const target = parseDatabaseUrl(url, cwd);
  if ('kind' in target && target.kind === 'sqlite' && target.file !== ':memory:' && !fs.existsSync(target.file)) {
    throw new NoDatabaseError(
      `no baton database at ${target.file} (DATABASE_URL ${maskUrlCredentials(url)}, working directory ${cwd}): ${FIX}`,
    );
  }
  const store = createStore({ url, sqliteSynchronous: config.database.sqliteSynchronous, timeouts: config.database.timeouts });
  try {
    const pending = await store.pendingMigrations();
    if (pending.length === migrations.length) {
      throw new NoDatabaseError(`the database at ${maskUrlCredentials(url)} has no baton tables: ${FIX}`);
    }
    await store.migrate();
    return store;
  } catch (err) {
    await store.close();
    throw err;
  }
}
