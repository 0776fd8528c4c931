import type { Migration } from './types.js';

/**
 * The runs list's text search (`GET /api/runs?q=…`: a run's title, error and summary, any
 * substring) without reading every run. A search that matches nothing otherwise reads all
 * 100,000 runs of a busy server, bench/runs-list.ts measures it.
 *
 * SQLite: an FTS5 table with the trigram tokenizer (SQLite ≥ 3.34; better-sqlite3 bundles a newer
 * one), one row per run under the run's id, kept by triggers. A phrase of three characters or more
 * matches it as a substring, case-insensitively, from the index (sqlite.org/fts5.html §4.3.5).
 * The title is read out of the payload only when the payload is JSON, so no insert can fail on it.
 * A later migration that rebuilds `runs` (copy, drop, rename) drops these triggers: it must make
 * them again.
 *
 * PostgreSQL: pg_trgm GIN indexes on the three columns, which ILIKE '%…%' uses (one bitmap per
 * column, OR-ed). CREATE EXTENSION needs a superuser, or a database owner for a trusted extension
 * such as pg_trgm (PostgreSQL ≥ 13), so it may fail: then the search works as before, reading
 * every run, and `baton_runs_search_index()` returns why; baton calls it again at every start
 * (it warns with the reason) and `baton doctor` reports it, so an extension a superuser adds
 * later is used from the next start. The extension goes into `public`, not baton's own schema:
 * dropping that schema must not drop an extension other schemas' indexes use.
 */
export const runsSearch: Migration = {
  name: '0140-runs-search',
  sqlite: [
    `CREATE VIRTUAL TABLE runs_search USING fts5(title, last_error, summary, tokenize = 'trigram')`,
    `CREATE TRIGGER runs_search_insert AFTER INSERT ON runs BEGIN
       INSERT INTO runs_search (rowid, title, last_error, summary)
       VALUES (new.id, CASE WHEN json_valid(new.payload) THEN json_extract(new.payload, '$.title') END, new.last_error, new.summary);
     END`,
    `CREATE TRIGGER runs_search_update AFTER UPDATE OF payload, last_error, summary ON runs BEGIN
       UPDATE runs_search
       SET title = CASE WHEN json_valid(new.payload) THEN json_extract(new.payload, '$.title') END,
           last_error = new.last_error, summary = new.summary
       WHERE rowid = new.id;
     END`,
    `CREATE TRIGGER runs_search_delete AFTER DELETE ON runs BEGIN
       DELETE FROM runs_search WHERE rowid = old.id;
     END`,
    `INSERT INTO runs_search (rowid, title, last_error, summary)
     SELECT id, CASE WHEN json_valid(payload) THEN json_extract(payload, '$.title') END, last_error, summary FROM runs`,
  ],
  postgres: [
    `CREATE OR REPLACE FUNCTION baton_runs_search_index() RETURNS text LANGUAGE plpgsql AS $fn$
     DECLARE
       trgm text;
     BEGIN
       -- The migrations' lock: replicas starting together make the indexes once.
       PERFORM pg_advisory_xact_lock(7203417118);
       SELECT n.nspname INTO trgm FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm';
       IF trgm IS NULL THEN
         BEGIN
           CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public;
           trgm := 'public';
         EXCEPTION WHEN OTHERS THEN
           RETURN format('CREATE EXTENSION pg_trgm failed: %s (SQLSTATE %s)', SQLERRM, SQLSTATE);
         END;
       END IF;
       EXECUTE format('CREATE INDEX IF NOT EXISTS runs_search_title ON runs USING gin ((payload::jsonb ->> %L) %I.gin_trgm_ops)', 'title', trgm);
       EXECUTE format('CREATE INDEX IF NOT EXISTS runs_search_error ON runs USING gin (last_error %I.gin_trgm_ops)', trgm);
       EXECUTE format('CREATE INDEX IF NOT EXISTS runs_search_summary ON runs USING gin (summary %I.gin_trgm_ops)', trgm);
       RETURN NULL;
     END
     $fn$`,
    `SELECT baton_runs_search_index()`,
  ],
};
