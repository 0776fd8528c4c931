import type { Migration } from './types.js';

/**
 * Replays of inbox deliveries (the deliveries inspector, src/ingress/inspector.ts). A replay is a new
 * inbox row (source `replay`) with a copy of the original's headers and body; `replay_of` names the
 * original and `replayed_by` the operator token's name, which the original's history shows (and
 * nothing sends to the forge). Both stay null for every other delivery. The inspector's most
 * common question, "what came from this repository lately", gets its own index.
 */
export const deliveryReplays: Migration = {
  name: '0050-delivery-replays',
  sqlite: [
    `ALTER TABLE inbox_deliveries ADD COLUMN replay_of INTEGER`,
    `ALTER TABLE inbox_deliveries ADD COLUMN replayed_by TEXT`,
    `CREATE INDEX inbox_deliveries_replay_of ON inbox_deliveries (replay_of) WHERE replay_of IS NOT NULL`,
    `CREATE INDEX inbox_deliveries_repository ON inbox_deliveries (repository, id)`,
  ],
  postgres: [
    `ALTER TABLE inbox_deliveries ADD COLUMN replay_of BIGINT`,
    `ALTER TABLE inbox_deliveries ADD COLUMN replayed_by TEXT`,
    `CREATE INDEX inbox_deliveries_replay_of ON inbox_deliveries (replay_of) WHERE replay_of IS NOT NULL`,
    `CREATE INDEX inbox_deliveries_repository ON inbox_deliveries (repository, id)`,
  ],
};
