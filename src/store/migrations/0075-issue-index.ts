import type { Migration } from './types.js';

/**
 * The per-issue SDLC view (`GET /api/issues/OWNER/REPO/N`) reads every run of one issue and of
 * its pull requests: without this index each read scans the whole runs table, which only grows
 * (until the retention prunes it).
 */
export const issueIndex: Migration = {
  name: '0075-issue-index',
  sqlite: [`CREATE INDEX runs_issue ON runs (owner, repo, number, id)`],
  postgres: [`CREATE INDEX runs_issue ON runs (owner, repo, number, id)`],
};
