import { sql, type Kysely } from 'kysely';
import { migrations as allMigrations, type Migration } from './migrations/index.js';
import type { Database } from './schema.js';

export interface MigrationResult {
  applied: string[];
  alreadyApplied: number;
}

/** Any constant: replicas that start together serialise on this advisory lock. */
const MIGRATION_LOCK_KEY = 7_203_417_118;

type Dialect = 'sqlite' | 'postgres';

/**
 * Applies every pending migration in one transaction. On PostgreSQL an advisory transaction lock
 * makes a second replica wait and then find nothing to do; on SQLite `BEGIN IMMEDIATE` takes the
 * single writer lock up front for the same effect.
 */
export async function applyMigrations(
  db: Kysely<Database>,
  dialect: Dialect,
  inTransaction: <T>(fn: (trx: Kysely<Database>) => Promise<T>) => Promise<T>,
  migrations: readonly Migration[] = allMigrations,
  now: () => number = Date.now,
): Promise<MigrationResult> {
  return inTransaction(async (trx) => {
    if (dialect === 'postgres') await sql`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`.execute(trx);
    await sql`CREATE TABLE IF NOT EXISTS baton_migrations (name TEXT PRIMARY KEY, applied_at BIGINT NOT NULL)`.execute(trx);
    const done = new Set((await trx.selectFrom('baton_migrations').select('name').execute()).map((r) => r.name));
    const applied: string[] = [];
    for (const migration of migrations) {
      if (done.has(migration.name)) continue;
      // Recorded first: should two migrators ever get this far at once, the second one fails on
      // the primary key before running any statement.
      await trx.insertInto('baton_migrations').values({ name: migration.name, applied_at: now() }).execute();
      for (const statement of migration[dialect]) await sql.raw(statement).execute(trx);
      applied.push(migration.name);
    }
    return { applied, alreadyApplied: done.size };
  });
}

export async function listPendingMigrations(
  db: Kysely<Database>,
  dialect: Dialect,
  migrations: readonly Migration[] = allMigrations,
): Promise<string[]> {
  const exists =
    dialect === 'postgres'
      ? (await sql<{ t: string | null }>`SELECT to_regclass('baton_migrations')::text AS t`.execute(db)).rows[0]?.t
      : (await sql<{ t: string }>`SELECT name AS t FROM sqlite_master WHERE type = 'table' AND name = 'baton_migrations'`.execute(db))
          .rows[0]?.t;
  if (!exists) return migrations.map((m) => m.name);
  const done = new Set((await db.selectFrom('baton_migrations').select('name').execute()).map((r) => r.name));
  return migrations.filter((m) => !done.has(m.name)).map((m) => m.name);
}
