import type { Migration } from './types.js';

/**
 * Ingress memory: deliveries already acted on (so a redelivered webhook has one effect) and the
 * labels last seen per issue/PR (Gitea's `label_updated` carries no diff, so "newly added" is
 * computed against this). Owner and repo are stored lower-cased: Gitea names are case-insensitive.
 */
export const ingress: Migration = {
  name: '0010-ingress',
  sqlite: [
    `CREATE TABLE webhook_deliveries (
      id TEXT PRIMARY KEY,
      event TEXT NOT NULL,
      repository TEXT,
      received_at INTEGER NOT NULL
    )`,
    `CREATE INDEX webhook_deliveries_received ON webhook_deliveries (received_at)`,
    `CREATE TABLE webhook_labels (
      scope TEXT NOT NULL,
      owner TEXT NOT NULL,
      repo TEXT NOT NULL,
      number INTEGER NOT NULL,
      labels TEXT NOT NULL,
      updated_at INTEGER NOT NULL,
      PRIMARY KEY (scope, owner, repo, number)
    )`,
  ],
  postgres: [
    `CREATE TABLE webhook_deliveries (
      id TEXT PRIMARY KEY,
      event TEXT NOT NULL,
      repository TEXT,
      received_at BIGINT NOT NULL
    )`,
    `CREATE INDEX webhook_deliveries_received ON webhook_deliveries (received_at)`,
    `CREATE TABLE webhook_labels (
      scope TEXT NOT NULL,
      owner TEXT NOT NULL,
      repo TEXT NOT NULL,
      number INTEGER NOT NULL,
      labels TEXT NOT NULL,
      updated_at BIGINT NOT NULL,
      PRIMARY KEY (scope, owner, repo, number)
    )`,
  ],
};
