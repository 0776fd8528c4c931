/**
 * A forward-only migration: plain SQL per dialect, applied in one transaction together with its
 * row in `baton_migrations`. Never edit a migration that has landed; add a new one.
 */
export interface Migration {
  /** Sorts the migrations; `NNNN-what-it-does`. */
  name: string;
  sqlite: readonly string[];
  postgres: readonly string[];
}
