import type { Migration } from './types.js';

/**
 * Catch-up from the forge API (src/catchup/).
 *
 * `forge_sync_cursors`: one row per repository catch-up reads (configured, or seen in a delivery).
 * `since` is the forge's own time (RFC 3339, as the forge wrote it), never baton's: the newest
 * `updated_at` catch-up has seen there. The next pass asks from a little before it, so a clock
 * that differs between baton and the forge loses nothing. `repository` is the lower-cased
 * `owner/repo` key; `owner`/`repo` keep the spelling first seen, for the forge's URLs.
 *
 * `pull_request_heads`: the head commit of each pull request that baton has acted on (a webhook's
 * opened or synchronized event, or catch-up's): one review per head, whoever saw it first.
 */
export const forgeSync: Migration = {
  name: '0052-forge-sync',
  sqlite: [
    `CREATE TABLE forge_sync_cursors (
      repository TEXT PRIMARY KEY,
      owner TEXT NOT NULL,
      repo TEXT NOT NULL,
      origin TEXT NOT NULL,
      since TEXT NOT NULL,
      created_at INTEGER NOT NULL,
      last_pass_at INTEGER,
      last_error TEXT
    )`,
    `CREATE TABLE pull_request_heads (
      repository TEXT NOT NULL,
      number INTEGER NOT NULL,
      head_sha TEXT NOT NULL,
      updated_at INTEGER NOT NULL,
      PRIMARY KEY (repository, number)
    )`,
  ],
  postgres: [
    `CREATE TABLE forge_sync_cursors (
      repository TEXT PRIMARY KEY,
      owner TEXT NOT NULL,
      repo TEXT NOT NULL,
      origin TEXT NOT NULL,
      since TEXT NOT NULL,
      created_at BIGINT NOT NULL,
      last_pass_at BIGINT,
      last_error TEXT
    )`,
    `CREATE TABLE pull_request_heads (
      repository TEXT NOT NULL,
      number INTEGER NOT NULL,
      head_sha TEXT NOT NULL,
      updated_at BIGINT NOT NULL,
      PRIMARY KEY (repository, number)
    )`,
  ],
};
