import type { Kysely } from 'kysely';
import type { Database } from '../store/index.js';
import { branchNamesIssue, buildIssueView, type IssueView } from './issue-view.js';
import { runIsOf, type ForgeItem } from './keys.js';
import { parseJson, toRun } from './rows.js';

/** Most runs the issue view reads per query; an issue with more is not a pipeline that works. */
const MAX_ISSUE_RUNS = 1000;

/**
 * Every run of an issue and of the pull requests linked to it, as its SDLC view (`RunQueries.issue`).
 * With `forge`, only that forge's runs (a ChatOps `status` on GitHub must not count Gitea's runs
 * of a repository of the same name), and on GitLab only the issue's or the merge request's.
 */
export async function readIssueView(
  db: Kysely<Database>,
  issue: { owner: string; repo: string; number: number } & Partial<Omit<ForgeItem, 'number'>>,
  now: number,
): Promise<IssueView | null> {
  const { owner, repo, number } = issue;
  const keep = (rows: Parameters<typeof toRun>[0][], linked: boolean) => {
    const all = rows.map(toRun);
    if (issue.forge === undefined) return all;
    return all.filter((run) =>
      // A linked pull request is GitLab's merge request, never an issue.
      runIsOf(run, { number: run.number ?? 0, forge: issue.forge, mergeRequest: linked || issue.mergeRequest }),
    );
  };
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
  const runs = [...keep(own, false), ...keep(pullRuns, true)];
  if (runs.length === 0) return null;
  return buildIssueView({ owner, repo, number }, runs, now);
}
