import type { Kysely } from 'kysely';
import type { Database } from '../store/index.js';

/** Row of `dashboard_sessions` (migration 0042), as stored. */
export interface DashboardSessionsTable {
  id: import('kysely').Generated<number>;
  /** SHA-256 (hex) of the session id the cookie carries. */
  session_hash: string;
  token_id: number;
  created_at: number;
  last_seen_at: number;
  /** Absolute end, whatever the activity. */
  expires_at: number;
  revoked_at: number | null;
}

export type SessionsDatabase = Database & { dashboard_sessions: DashboardSessionsTable };

/** The store's handle, typed to include the sessions table (its type lives here, next to its only users). */
export function withSessionsTable(db: Kysely<Database>): Kysely<SessionsDatabase> {
  return db.withTables<{ dashboard_sessions: DashboardSessionsTable }>();
}
