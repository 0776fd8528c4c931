import type { Kysely } from 'kysely';
import type { Database } from '../store/index.js';
import { branchNamesIssue, buildIssueView, type IssueView } from './issue-view.js';
import { parseJson, toRun } from './rows.js';

/** Most runs the issue view reads per query; an issue with more is not a pipeline that works. */
const MAX_ISSUE_RUNS = 1000;

/** Every run of an issue and of the pull requests linked to it, as its SDLC view (`RunQueries.issue`). */
export async function readIssueView(
  db: Kysely<Database>,
  issue: { owner: string; repo: string; number: number },
  now: number,
): Promise<IssueView | null> {
  const { owner, repo, number } = issue;
  const ofRepository = db.selectFrom('runs').selectAll().where('owner', '=', owner).where('repo', '=', repo);
  const own = await ofRepository.where('number', '=', number).orderBy('id').limit(MAX_ISSUE_RUNS).execute();
  // Pull requests are linked by their head branch (see issue-view.ts). The LIKE only narrows
  // the rows read (the number is a whole number, so the pattern holds no wildcard of its
  // own); the branch rule decides.
  const candidates = await ofRepository
    .where('number', 'is not', null)
    .where('number', '!=', number)
    .where('payload', 'like', `%issue-${number}%`)
    .orderBy('id')
    .limit(MAX_ISSUE_RUNS)
    .execute();
  const pulls = new Set<number>();
  for (const row of candidates) {
    const headRef = parseJson<{ headRef?: unknown }>(row.payload)?.headRef;
    if (typeof headRef === 'string' && branchNamesIssue(headRef, number)) pulls.add(row.number!);
  }
  const pullRuns =
    pulls.size === 0
      ? []
      : await ofRepository
          .where('number', 'in', [...pulls])
          .orderBy('id')
          .limit(MAX_ISSUE_RUNS)
          .execute();
  if (own.length === 0 && pullRuns.length === 0) return null;
  return buildIssueView(issue, [...own, ...pullRuns].map(toRun), now);
}
