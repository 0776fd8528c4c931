import type { Migration } from './types.js';

/**
 * Repositories baton has seen in a signed forge delivery. A manual submission (`baton run`,
 * `POST /api/runs`) is accepted only for a repository baton knows, and a signed delivery is proof
 * the forge's owner of that repository pointed its webhook at baton; the inbox itself is pruned
 * after `webhooks.deliveryRetentionDays`, this memory is not.
 */
export const knownRepositories: Migration = {
  name: '0095-known-repositories',
  sqlite: [
    `CREATE TABLE known_repositories (
      repository TEXT PRIMARY KEY,
      first_seen_at INTEGER NOT NULL
    )`,
  ],
  postgres: [
    `CREATE TABLE known_repositories (
      repository TEXT PRIMARY KEY,
      first_seen_at BIGINT NOT NULL
    )`,
  ],
};
