import type { Migration } from './types.js';

/**
 * The forge facts baton has acted on, so an event that reached it twice (its webhook,
 * and catch-up reading the forge API after a delivery was lost, or the reverse) has one effect.
 *
 * `forge_facts`: one row per fact (`opened:12`, `comment:345`, `review:7:alice:approved:<sha>:<hash>`)
 * of a repository (lower-cased, named with its forge outside Gitea: `github:acme/app`), written in
 * the transaction of the delivery's verdict; the primary key makes the second writer lose. The
 * row of repository '' and fact `recording-since` says from when facts were recorded: catch-up
 * rebuilds openings, comments and reviews only from then on (earlier ones were acted on, or not,
 * by a version that kept no such record).
 */
export const forgeFacts: Migration = {
  name: '0090-forge-facts',
  sqlite: [
    `CREATE TABLE forge_facts (
      repository TEXT NOT NULL,
      fact TEXT NOT NULL,
      delivery_id INTEGER,
      created_at INTEGER NOT NULL,
      PRIMARY KEY (repository, fact)
    )`,
    `CREATE INDEX forge_facts_created ON forge_facts (created_at)`,
  ],
  postgres: [
    `CREATE TABLE forge_facts (
      repository TEXT NOT NULL,
      fact TEXT NOT NULL,
      delivery_id BIGINT,
      created_at BIGINT NOT NULL,
      PRIMARY KEY (repository, fact)
    )`,
    `CREATE INDEX forge_facts_created ON forge_facts (created_at)`,
  ],
};
