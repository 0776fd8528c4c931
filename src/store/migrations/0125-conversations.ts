import type { Migration } from './types.js';

const LIVE = `status IN ('queued', 'provisioning', 'running', 'held', 'waiting')`;

/**
 * Conversations (runs/conversation.ts): a run whose agent asked a question waits (`waiting`) for a
 * reply, without a workspace.
 * - a waiting run keeps its dedup key: the unique index on live keys covers it too;
 * - `run_conversations`: one row per run that asked: the agent CLI's session id, the open
 *   question, the reply that resumes it, the turn count, the usage of the turns before (budgets
 *   and the token cap count the whole conversation), and the session's transcript, gzip'd, as the
 *   runner uploaded it (restored into the next workspace so the CLI can resume the session).
 */
export const conversations: Migration = {
  name: '0125-conversations',
  sqlite: [
    `DROP INDEX runs_live_key`,
    `CREATE UNIQUE INDEX runs_live_key ON runs (key) WHERE ${LIVE}`,
    `CREATE INDEX runs_waiting ON runs (updated_at, id) WHERE status = 'waiting'`,
    `CREATE TABLE run_conversations (
      run_id INTEGER PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
      session_id TEXT,
      question TEXT,
      asked_for TEXT,
      asked_at INTEGER,
      reply TEXT,
      reply_by TEXT,
      replied_at INTEGER,
      turns INTEGER NOT NULL DEFAULT 1,
      usage TEXT,
      cost_usd REAL NOT NULL DEFAULT 0,
      transcript BLOB,
      transcript_bytes INTEGER NOT NULL DEFAULT 0,
      updated_at INTEGER NOT NULL
    )`,
  ],
  postgres: [
    `DROP INDEX runs_live_key`,
    `CREATE UNIQUE INDEX runs_live_key ON runs (key) WHERE ${LIVE}`,
    `CREATE INDEX runs_waiting ON runs (updated_at, id) WHERE status = 'waiting'`,
    `CREATE TABLE run_conversations (
      run_id BIGINT PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
      session_id TEXT,
      question TEXT,
      asked_for TEXT,
      asked_at BIGINT,
      reply TEXT,
      reply_by TEXT,
      replied_at BIGINT,
      turns INTEGER NOT NULL DEFAULT 1,
      usage TEXT,
      cost_usd DOUBLE PRECISION NOT NULL DEFAULT 0,
      transcript BYTEA,
      transcript_bytes INTEGER NOT NULL DEFAULT 0,
      updated_at BIGINT NOT NULL
    )`,
  ],
};
