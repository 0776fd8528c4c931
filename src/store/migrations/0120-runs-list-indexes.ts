import type { Migration } from './types.js';

/**
 * The runs list (`GET /api/runs`, the dashboard) pages newest first by id; a filter on a stage or
 * a repository reads its own index backwards from the cursor instead of scanning every run
 * newer than it. Status already has `runs_status (status, id)` (0001); one issue has
 * `runs_issue` (0075). bench/runs-list.ts measures the pages with 100,000 runs.
 */
export const runsListIndexes: Migration = {
  name: '0120-runs-list-indexes',
  sqlite: [`CREATE INDEX runs_stage ON runs (stage, id)`, `CREATE INDEX runs_repository ON runs (owner, repo, id)`],
  postgres: [
    `CREATE INDEX IF NOT EXISTS runs_stage ON runs (stage, id)`,
    `CREATE INDEX IF NOT EXISTS runs_repository ON runs (owner, repo, id)`,
  ],
};
