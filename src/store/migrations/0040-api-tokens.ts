import type { Migration } from './types.js';

/**
 * Operator API tokens. Only the SHA-256 of a token is stored; `hint` keeps its first characters
 * so `baton token list` can tell tokens apart without revealing them.
 */
export const apiTokens: Migration = {
  name: '0040-api-tokens',
  sqlite: [
    `CREATE TABLE api_tokens (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      name TEXT NOT NULL,
      token_hash TEXT NOT NULL,
      hint TEXT NOT NULL,
      created_at INTEGER NOT NULL,
      last_used_at INTEGER,
      revoked_at INTEGER
    )`,
    `CREATE UNIQUE INDEX api_tokens_hash ON api_tokens (token_hash)`,
    `CREATE UNIQUE INDEX api_tokens_live_name ON api_tokens (name) WHERE revoked_at IS NULL`,
  ],
  postgres: [
    `CREATE TABLE api_tokens (
      id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      name TEXT NOT NULL,
      token_hash TEXT NOT NULL,
      hint TEXT NOT NULL,
      created_at BIGINT NOT NULL,
      last_used_at BIGINT,
      revoked_at BIGINT
    )`,
    `CREATE UNIQUE INDEX api_tokens_hash ON api_tokens (token_hash)`,
    `CREATE UNIQUE INDEX api_tokens_live_name ON api_tokens (name) WHERE revoked_at IS NULL`,
  ],
};
