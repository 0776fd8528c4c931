import type { Migration } from './types.js';

/** The key each row had: `{stage}-{owner}-{repo}[-{number}]`, built from the row's own columns. */
const LEGACY = `(stage || '-' || owner || '-' || repo || CASE WHEN number IS NULL THEN '' ELSE '-' || number END)`;
/** The key it gets: `{stage}:{owner}/{repo}[#{number}]` (src/runs/keys.ts). */
const CURRENT = `(stage || ':' || owner || '/' || repo || CASE WHEN number IS NULL THEN '' ELSE '#' || number END)`;

/**
 * Run keys that name the repository unambiguously. The old `{stage}-{owner}-{repo}-{number}` gave
 * `acme/web-api#6` and `acme-web/api#6` the same key, so one repository's event coalesced into,
 * or followed up, the other's run. Every row is rewritten from its own columns, so the rewrite
 * cannot collide: two rows that shared an old key could not both be live (the unique index on
 * live keys), and the new key is different for every (stage, owner, repo, number). A scheduled
 * run's key carried its slot after one more `-`; it now follows an `@`. A key that is neither
 * (none is written by baton) is left as it is.
 *
 * A live run's recorded follow-up may have come from the other repository of such a pair: its
 * payload is dropped, and the follow-up runs with the run's own payload (src/runs/engine.ts).
 */
const statements = [
  `UPDATE runs SET key = ${CURRENT} || CASE WHEN key = ${LEGACY} THEN '' ELSE '@' || substr(key, length(${LEGACY}) + 2) END
   WHERE key = ${LEGACY} OR substr(key, 1, length(${LEGACY}) + 1) = ${LEGACY} || '-'`,
  `UPDATE runs SET followup_payload = NULL WHERE followup = 1 AND status IN ('provisioning', 'running')`,
];

export const unambiguousRunKeys: Migration = {
  name: '0055-unambiguous-run-keys',
  sqlite: statements,
  postgres: statements,
};
