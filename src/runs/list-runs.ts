import { sql, type Kysely } from 'kysely';
import type { Database, StoreDialect } from '../store/index.js';
import { toRun } from './rows.js';
import type { Run, RunFilter } from './types.js';

/** Largest page `list` returns, whatever the filter asks. */
const MAX_LIST = 500;

/** A page of runs, newest first, as `filter` narrows them (`RunQueries.list`). */
export async function listRuns(db: Kysely<Database>, dialect: StoreDialect, filter: RunFilter = {}): Promise<Run[]> {
  // Keyset pagination on the primary key: a page is `id < cursor ORDER BY id DESC LIMIT n`,
  // as cheap on page 2,000 as on page 1, and stable while runs are added (an OFFSET page
  // shifts by every run queued since the first). The indexes behind each filter are in
  // migration 0120 (stage, repository) and 0001 (status); bench/runs-list.ts measures them.
  let query = db.selectFrom('runs').selectAll();
  if (filter.status) query = query.where('status', 'in', Array.isArray(filter.status) ? filter.status : [filter.status]);
  if (filter.stage) query = query.where('stage', '=', filter.stage);
  if (filter.owner) query = query.where('owner', '=', filter.owner);
  if (filter.repo) query = query.where('repo', '=', filter.repo);
  if (filter.number !== undefined) query = query.where('number', '=', filter.number);
  if (filter.since !== undefined) query = query.where('created_at', '>=', filter.since);
  if (filter.until !== undefined) query = query.where('created_at', '<', filter.until);
  if (filter.text) {
    const pattern = `%${filter.text.replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`;
    // SQLite's LIKE ignores ASCII case already; PostgreSQL's needs ILIKE.
    const postgres = dialect === 'postgres';
    const like = sql.raw(postgres ? 'ILIKE' : 'LIKE');
    const title = postgres ? sql`(payload::jsonb ->> 'title')` : sql`json_extract(payload, '$.title')`;
    query = query.where(({ or }) =>
      or([
        sql<boolean>`${title} ${like} ${pattern} ESCAPE '\\'`,
        sql<boolean>`last_error ${like} ${pattern} ESCAPE '\\'`,
        sql<boolean>`summary ${like} ${pattern} ESCAPE '\\'`,
      ]),
    );
  }
  if (filter.beforeId !== undefined) query = query.where('id', '<', filter.beforeId);
  const rows = await query
    .orderBy('id', 'desc')
    .limit(Math.min(filter.limit ?? 50, MAX_LIST))
    .execute();
  return rows.map(toRun);
}
