import { sql } from 'kysely';
import type { Store } from '../store/index.js';

/** The indexes migration 0140 makes on PostgreSQL when pg_trgm is there. */
const TRIGRAM_INDEXES = ['runs_search_title', 'runs_search_error', 'runs_search_summary'];

const FIX =
  'a superuser can run CREATE EXTENSION pg_trgm SCHEMA public in this database (PostgreSQL contrib), ' +
  'baton makes the indexes at its next start; see docs/troubleshooting.md#slow-search';

/**
 * Makes the runs search's trigram indexes if they are missing and pg_trgm is (or can be)
 * installed; at every start, so an extension a superuser adds later is used without a migration.
 * Null when the search is indexed (always on SQLite, whose FTS5 table needs no extension), else
 * the warning to log: without them every search that finds fewer than a page reads all runs.
 */
export async function ensureRunsSearch(store: Store): Promise<string | null> {
  if (store.dialect !== 'postgres') return null;
  const { rows } = await sql<{ problem: string | null }>`SELECT baton_runs_search_index() AS problem`.execute(store.db);
  const problem = rows[0]?.problem ?? null;
  return problem === null ? null : `the runs search reads every run: ${problem}; ${FIX}`;
}

/** What `baton doctor` says of the runs search, reading only: null when it is indexed. */
export async function readRunsSearch(store: Store): Promise<string | null> {
  if (store.dialect !== 'postgres') return null;
  const { rows } = await sql<{ present: string | number }>`
    SELECT count(*) AS present FROM pg_indexes
    WHERE schemaname = current_schema() AND tablename = 'runs' AND indexname IN (${sql.join(TRIGRAM_INDEXES)})`.execute(store.db);
  if (Number(rows[0]?.present ?? 0) === TRIGRAM_INDEXES.length) return null;
  const { rows: available } = await sql<{ installed: string | null }>`
    SELECT installed_version AS installed FROM pg_available_extensions WHERE name = 'pg_trgm'`.execute(store.db);
  const why =
    available.length === 0
      ? 'pg_trgm is not available on the database server'
      : available[0]!.installed === null
        ? "pg_trgm is not installed in this database and baton's user may not install it"
        : 'pg_trgm is installed, the indexes are not made yet';
  return `the runs search reads every run: ${why}; ${FIX}`;
}
