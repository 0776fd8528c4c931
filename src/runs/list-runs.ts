import { sql, type Kysely } from 'kysely';
import type { Database, StoreDialect } from '../store/index.js';
import { toRun } from './rows.js';
import type { Run, RunFilter } from './types.js';

/** Largest page `list` returns, whatever the filter asks. */
const MAX_LIST = 500;

/** Trigrams: a shorter search has none, and the FTS5 trigram table matches nothing for it. */
const MIN_INDEXED_SEARCH = 3;

/**
 * Runs whose title, error or summary contains `text`, ignoring case. The indexes behind it are
 * in migration 0140: on SQLite the FTS5 trigram table `runs_search` (a phrase matches as a
 * substring); on PostgreSQL pg_trgm indexes that ILIKE uses when the extension could be installed.
 * A search of one or two characters (and PostgreSQL without pg_trgm) reads the runs themselves.
 */
function textMatches(dialect: StoreDialect, text: string) {
  if (dialect === 'sqlite' && [...text].length >= MIN_INDEXED_SEARCH) {
    const phrase = `"${text.replace(/"/g, '""')}"`;
    return sql<boolean>`id IN (SELECT rowid FROM runs_search WHERE runs_search MATCH ${phrase})`;
  }
  const pattern = `%${text.replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`;
  // SQLite's LIKE ignores ASCII case already; PostgreSQL's needs ILIKE.
  const postgres = dialect === 'postgres';
  const like = sql.raw(postgres ? 'ILIKE' : 'LIKE');
  // Written as the indexes of migration 0140 are, so PostgreSQL's planner can use them.
  const title = postgres ? sql`(payload::jsonb ->> 'title')` : sql`json_extract(payload, '$.title')`;
  return sql<boolean>`(${title} ${like} ${pattern} ESCAPE '\\' OR last_error ${like} ${pattern} ESCAPE '\\' OR summary ${like} ${pattern} ESCAPE '\\')`;
}

/** A page of runs, newest first, as `filter` narrows them (`RunQueries.list`). */
export async function listRuns(db: Kysely<Database>, dialect: StoreDialect, filter: RunFilter = {}): Promise<Run[]> {
  // Keyset pagination on the primary key: a page is `id < cursor ORDER BY id DESC LIMIT n`,
  // as cheap on page 2,000 as on page 1, and stable while runs are added (an OFFSET page
  // shifts by every run queued since the first). The indexes behind each filter are in
  // migration 0120 (stage, repository) and 0001 (status), the search's in 0140; bench/runs-list.ts
  // measures them.
  let query = db.selectFrom('runs').selectAll();
  if (filter.status) query = query.where('status', 'in', Array.isArray(filter.status) ? filter.status : [filter.status]);
  if (filter.stage) query = query.where('stage', '=', filter.stage);
  if (filter.owner) query = query.where('owner', '=', filter.owner);
  if (filter.repo) query = query.where('repo', '=', filter.repo);
  if (filter.number !== undefined) query = query.where('number', '=', filter.number);
  if (filter.since !== undefined) query = query.where('created_at', '>=', filter.since);
  if (filter.until !== undefined) query = query.where('created_at', '<', filter.until);
  if (filter.text) query = query.where(textMatches(dialect, filter.text));
  if (filter.beforeId !== undefined) query = query.where('id', '<', filter.beforeId);
  const rows = await query
    .orderBy('id', 'desc')
    .limit(Math.min(filter.limit ?? 50, MAX_LIST))
    .execute();
  return rows.map(toRun);
}
