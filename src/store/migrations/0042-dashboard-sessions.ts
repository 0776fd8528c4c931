import type { Migration } from './types.js';

/**
 * Dashboard sessions: logging in with an API token makes one. The cookie carries a random id;
 * only its SHA-256 is stored. A session ends at `expires_at` (absolute), after an idle spell
 * (`last_seen_at`), at logout (`revoked_at`), or when its token is revoked.
 */
export const dashboardSessions: Migration = {
  name: '0042-dashboard-sessions',
  sqlite: [
    `CREATE TABLE dashboard_sessions (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      session_hash TEXT NOT NULL,
      token_id INTEGER NOT NULL REFERENCES api_tokens (id),
      created_at INTEGER NOT NULL,
      last_seen_at INTEGER NOT NULL,
      expires_at INTEGER NOT NULL,
      revoked_at INTEGER
    )`,
    `CREATE UNIQUE INDEX dashboard_sessions_hash ON dashboard_sessions (session_hash)`,
    `CREATE INDEX dashboard_sessions_token ON dashboard_sessions (token_id)`,
  ],
  postgres: [
    `CREATE TABLE dashboard_sessions (
      id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      session_hash TEXT NOT NULL,
      token_id BIGINT NOT NULL REFERENCES api_tokens (id),
      created_at BIGINT NOT NULL,
      last_seen_at BIGINT NOT NULL,
      expires_at BIGINT NOT NULL,
      revoked_at BIGINT
    )`,
    `CREATE UNIQUE INDEX dashboard_sessions_hash ON dashboard_sessions (session_hash)`,
    `CREATE INDEX dashboard_sessions_token ON dashboard_sessions (token_id)`,
  ],
};
