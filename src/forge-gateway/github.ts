import type { Run } from '../runs/index.js';
import {
  basic,
  changeIn,
  decodeSegment,
  gitTargetOf,
  isDraftRelease,
  isRunRepository,
  type ChangeTable,
  type ForgeDialect,
} from './dialect.js';

/**
 * GitHub and GitHub Enterprise Server through the gateway. The run sees the API in the Enterprise
 * Server layout, `<gateway>/api/v3` (its `GITHUB_API_URL`), whatever the real root is
 * (`https://api.github.com`, or `<root>/api/v3`), and git at `<gateway>/<owner>/<repo>.git`.
 *
 * Sources (docs.github.com, REST API version 2022-11-28): "REST API endpoints for issues",
 * "… for issue comments", "… for labels", "… for reactions", "… for pull requests", "… for pull
 * request reviews", "… for pull request review comments", "… for review requests", "… for
 * releases", "… for branches" ("Get a branch": `protected`), "… for repositories" (`default_branch`);
 * "Authenticating to the REST API" (`Authorization: Bearer`); "Authenticating as a GitHub App
 * installation" (git over HTTP: `https://x-access-token:TOKEN@github.com/owner/repo.git`, the token
 * as the password, as for a personal access token).
 */

/** Reads outside the repository that tools make: who am I, how much rate is left. */
const GLOBAL_READS = new Set(['/api/v3/user', '/api/v3/rate_limit']);

/** The changes runs may make under `/repos/{owner}/{repo}`: the same work as on Gitea, in GitHub's paths. */
const CHANGES: ChangeTable = [
  [/^POST$/, /^\/issues$/, 'issue-create'],
  [/^PATCH$/, /^\/issues\/\d+$/, 'issue-edit'],
  [/^POST$/, /^\/issues\/\d+\/comments$/, 'comment'],
  [/^(PATCH|DELETE)$/, /^\/issues\/comments\/\d+$/, 'comment-edit'],
  [/^(POST|PUT|DELETE)$/, /^\/issues\/\d+\/labels(\/[^/]+)?$/, 'label'],
  [/^POST$/, /^\/issues\/(\d+|comments\/\d+)\/reactions$/, 'reaction'],
  [/^DELETE$/, /^\/issues\/(\d+|comments\/\d+)\/reactions\/\d+$/, 'reaction'],
  [/^POST$/, /^\/pulls$/, 'pull-create'],
  [/^PATCH$/, /^\/pulls\/\d+$/, 'pull-edit'],
  // A review, its submission of a pending one, its body, and review (line) comments and replies.
  [/^POST$/, /^\/pulls\/\d+\/reviews(\/\d+\/events)?$/, 'review'],
  [/^PUT$/, /^\/pulls\/\d+\/reviews\/\d+$/, 'review'],
  [/^POST$/, /^\/pulls\/\d+\/comments(\/\d+\/replies)?$/, 'review'],
  [/^(POST|DELETE)$/, /^\/pulls\/\d+\/requested_reviewers$/, 'reviewers'],
  // GitHub merges with PUT (Gitea with POST).
  [/^PUT$/, /^\/pulls\/\d+\/merge$/, 'merge'],
  [/^POST$/, /^\/releases$/, 'release'],
];

export function githubDialect(options: { apiUrl: string; gitUrl: string }): ForgeDialect {
  const api = options.apiUrl.replace(/\/+$/, '');
  const gitBase = options.gitUrl.replace(/\/+$/, '');
  const repository = (run: Run) => `${api}/repos/${encodeURIComponent(run.owner)}/${encodeURIComponent(run.repo)}`;
  return {
    name: 'GitHub',
    credentialVariable: 'GH_TOKEN',
    apiBase: api,
    apiPrefix: '/api/v3',
    targetOf(path, service, run) {
      if (GLOBAL_READS.has(path)) return { kind: 'global' };
      if (/^\/api(\/v3)?\/graphql$/.test(path))
        return {
          kind: 'refused',
          reason: "GitHub's GraphQL API is not served: a query can name any repository; use the REST API at GITHUB_API_URL",
        };
      // An encoded slash or backslash could make GitHub read a path other than the one checked.
      if (/%2f|%5c|\\/i.test(path)) return { kind: 'refused', reason: 'a path with an encoded slash is not served' };
      const byName = /^\/api\/v3\/repos\/([^/]+)\/([^/]+)(\/.*)?$/.exec(path);
      if (byName) {
        const owner = decodeSegment(byName[1]!);
        const repo = decodeSegment(byName[2]!);
        return owner !== null && repo !== null && isRunRepository(run, owner, repo) ? { kind: 'api', rest: byName[3] ?? '' } : null;
      }
      // GitHub's own links (pagination among them) name a repository by its id: `/repositories/{id}/…`.
      const byId = /^\/api\/v3\/repositories\/(\d{1,15})(\/.*)?$/.exec(path);
      if (byId) return { kind: 'api', rest: byId[2] ?? '', byId: byId[1]! };
      return gitTargetOf(path, service, run);
    },
    changeOf: (method, rest) => changeIn(CHANGES, method, rest),
    upstreamUrl: (path, target) => (target.kind === 'git' ? `${gitBase}${path}` : `${api}${path.slice('/api/v3'.length)}`),
    apiAuth: (token) => ({ authorization: `Bearer ${token}` }),
    gitAuth: (token) => basic('x-access-token', token),
    repositoryUrl: repository,
    // Branch names keep their slashes in GitHub's paths (`/branches/feature/issue-1-x`).
    branchUrl: (run, branch) => `${repository(run)}/branches/${branch.split('/').map(encodeURIComponent).join('/')}`,
    pullUrl: (run, number) => `${repository(run)}/pulls/${number}`,
    headRefOf: (pull) => (pull as { head?: { ref?: string } } | null)?.head?.ref,
    releaseProblem: (body) =>
      isDraftRelease(body) ? null : 'a release through the gateway must be a draft (publishing one makes its tag)',
  };
}
