import type { Migration } from './types.js';

/**
 * Which forge a run's repository is on, as a column (GitHub and GitLab beside Gitea): made from
 * the payload's `forge`, which the inbox has always written, so no insert changes and the runs of
 * before read `gitea` (or `forgejo`, when their webhook said so). The per-issue view and the
 * dashboard filter on it; the run keys name the forge themselves (src/runs/keys.ts).
 */
export const runForge: Migration = {
  name: '0110-run-forge',
  // SQLite adds only VIRTUAL generated columns to an existing table; computed when read.
  sqlite: [`ALTER TABLE runs ADD COLUMN forge TEXT GENERATED ALWAYS AS (coalesce(json_extract(payload, '$.forge'), 'gitea')) VIRTUAL`],
  postgres: [`ALTER TABLE runs ADD COLUMN forge TEXT GENERATED ALWAYS AS (coalesce(payload::jsonb ->> 'forge', 'gitea')) STORED`],
};
