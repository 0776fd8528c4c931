import type { Run } from '../runs/index.js';
import { basic, changeIn, decodeSegment, gitServiceOf, type ChangeTable, type ForgeDialect, type Target } from './dialect.js';

/**
 * GitLab through the gateway: the API at `<gateway>/api/v4` (the run's `CI_API_V4_URL`), projects
 * addressed by their URL-encoded path (`/projects/acme%2Fapp`, `/projects/acme%2Fplatform%2Fapp` in a
 * subgroup) or their numeric id (checked against the run's project), git at
 * `<gateway>/<namespace>/<project>.git`, the namespace as deep as the project's subgroups.
 *
 * Sources (docs.gitlab.com, REST API v4): "Issues API", "Merge requests API", "Notes API",
 * "Discussions API", "Draft notes API", "Merge request approvals API", "Emoji reactions API",
 * "Releases API" (no drafts: a release is published when made, and `ref` makes its tag),
 * "Branches API" (`GET /projects/:id/repository/branches/:branch`: `protected`), "Projects API"
 * (`default_branch`), "REST API" authentication (`PRIVATE-TOKEN`); git over HTTP takes a personal
 * access token as the password with any user name (gitlab-org/gitlab#212953) and an OAuth token
 * with the user name `oauth2` ("OAuth 2.0 identity provider API": access Git over HTTPS).
 */

/**
 * Whether `path` (decoded) is the run's project path, the namespace (the run's owner, subgroups
 * and all) and the project (GitLab compares paths without case: `Route.find_by_full_path`).
 */
function isRunProjectPath(run: Pick<Run, 'owner' | 'repo'>, path: string): boolean {
  return path.toLowerCase() === `${run.owner}/${run.repo}`.toLowerCase();
}

/**
 * Git's smart HTTP under `/<namespace>/<project>[.git]/…` (gitlab-org/gitlab lib/gitlab/path_regex.rb
 * `full_project_git_path_regex`: the namespace any number of segments deep): the run's project only.
 */
function gitLabGitTargetOf(path: string, service: string | undefined, run: Run): Target | null {
  const git = /^\/(.+?)(?:\.git)?\/(info\/refs|git-upload-pack|git-receive-pack)$/.exec(path);
  if (!git || !isRunProjectPath(run, git[1]!)) return null;
  return gitServiceOf(git[2]!, service);
}

/** Reads outside the project that tools make. */
const GLOBAL_READS = new Set(['/api/v4/user', '/api/v4/version', '/api/v4/metadata']);

/** The changes runs may make under `/projects/:id`: the same work as on Gitea, in GitLab's paths. */
const CHANGES: ChangeTable = [
  [/^POST$/, /^\/issues$/, 'issue-create'],
  [/^PUT$/, /^\/issues\/\d+$/, 'issue-edit'],
  [/^POST$/, /^\/(issues|merge_requests)\/\d+\/notes$/, 'comment'],
  [/^(PUT|DELETE)$/, /^\/(issues|merge_requests)\/\d+\/notes\/\d+$/, 'comment-edit'],
  [/^POST$/, /^\/(issues|merge_requests)\/\d+(\/notes\/\d+)?\/award_emoji$/, 'reaction'],
  [/^DELETE$/, /^\/(issues|merge_requests)\/\d+(\/notes\/\d+)?\/award_emoji\/\d+$/, 'reaction'],
  [/^POST$/, /^\/merge_requests$/, 'pull-create'],
  [/^PUT$/, /^\/merge_requests\/\d+$/, 'pull-edit'],
  // Line comments (discussions and their replies), draft notes and their publishing, approvals.
  [/^POST$/, /^\/merge_requests\/\d+\/discussions(\/[0-9a-f]{1,64}\/notes)?$/, 'review'],
  [/^POST$/, /^\/merge_requests\/\d+\/draft_notes(\/bulk_publish)?$/, 'review'],
  [/^POST$/, /^\/merge_requests\/\d+\/(approve|unapprove)$/, 'review'],
  [/^PUT$/, /^\/merge_requests\/\d+\/merge$/, 'merge'],
  [/^POST$/, /^\/releases$/, 'release'],
];

export function gitlabDialect(options: { apiUrl: string; gitUrl: string }): ForgeDialect {
  const api = options.apiUrl.replace(/\/+$/, '');
  const gitBase = options.gitUrl.replace(/\/+$/, '');
  const project = (run: Run) => `${api}/projects/${encodeURIComponent(`${run.owner}/${run.repo}`)}`;
  return {
    name: 'GitLab',
    credentialVariable: 'GITLAB_TOKEN',
    apiBase: api,
    apiPrefix: '/api/v4',
    targetOf(path, service, run) {
      if (GLOBAL_READS.has(path)) return { kind: 'global' };
      if (path === '/api/graphql' || path === '/api/v4/graphql')
        return {
          kind: 'refused',
          reason: "GitLab's GraphQL API is not served: a query can name any project; use the REST API at CI_API_V4_URL",
        };
      const match = /^\/api\/v4\/projects\/([^/]+)(\/.*)?$/.exec(path);
      if (!match) return gitLabGitTargetOf(path, service, run);
      const id = decodeSegment(match[1]!);
      if (id === null) return null;
      if (/^\d{1,15}$/.test(id)) return { kind: 'api', rest: match[2] ?? '', byId: id };
      // The whole path, compared as one string: a parent group (`acme/platform`) or a sibling
      // whose name the run's extends (`acme/platform/app-other`) is another project.
      return isRunProjectPath(run, id) ? { kind: 'api', rest: match[2] ?? '' } : null;
    },
    changeOf: (method, rest) => changeIn(CHANGES, method, rest),
    upstreamUrl: (path, target) => (target.kind === 'git' ? `${gitBase}${path}` : `${api}${path.slice('/api/v4'.length)}`),
    apiAuth: (token) => ({ 'private-token': token }),
    // `oauth2` works for OAuth tokens and, as any name does, for personal and project access tokens.
    gitAuth: (token) => basic('oauth2', token),
    repositoryUrl: project,
    branchUrl: (run, branch) => `${project(run)}/repository/branches/${encodeURIComponent(branch)}`,
    pullUrl: (run, number) => `${project(run)}/merge_requests/${number}`,
    headRefOf: (mr) => (mr as { source_branch?: string } | null)?.source_branch,
    reviewerStateOf: (method, rest, body) => {
      const target = /^\/merge_requests\/(\d+)\/draft_notes\/bulk_publish$/.exec(rest);
      if (method !== 'POST' || !target || typeof body !== 'object' || body === null) return null;
      // Grape reads `reviewer_state` as written; any case is looked at, as rights.ts does for fields.
      const set = Object.entries(body).some(([key, value]) => key.toLowerCase() === 'reviewer_state' && value !== null && value !== '');
      return set ? Number(target[1]) : null;
    },
    releaseProblem: () => 'GitLab has no draft releases: one made through the API is published at once (and makes its tag)',
  };
}
