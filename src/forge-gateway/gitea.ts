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

/** Endpoints outside the repository that tools ask for (tea, the agent's curl calls). */
const GLOBAL_READS = new Set(['/api/v1/version', '/api/v1/user', '/api/v1/settings/api']);

/**
 * What the dev account may change through Gitea's API (`/api/v1/repos/{owner}/{repo}…`), by method
 * and path under the repository: the work the stage prompts do. Everything else the bot's rights
 * would allow is refused: collaborators, deploy keys, webhooks, settings, branch protections, file
 * writes through `contents` (a commit to the default branch past the push check), deleting the
 * repository.
 */
const CHANGES: ChangeTable = [
  [/^POST$/, /^\/issues$/, 'issue-create'],
  [/^PATCH$/, /^\/issues\/\d+$/, 'issue-edit'],
  [/^POST$/, /^\/issues\/\d+\/comments$/, 'comment'],
  [/^(PATCH|DELETE)$/, /^\/issues\/comments\/\d+$/, 'comment-edit'],
  [/^(POST|PUT|DELETE)$/, /^\/issues\/\d+\/labels(\/[^/]+)?$/, 'label'],
  [/^(POST|DELETE)$/, /^\/issues\/(\d+|comments\/\d+)\/reactions$/, 'reaction'],
  [/^POST$/, /^\/pulls$/, 'pull-create'],
  [/^PATCH$/, /^\/pulls\/\d+$/, 'pull-edit'],
  [/^POST$/, /^\/pulls\/\d+\/reviews(\/\d+(\/comments)?)?$/, 'review'],
  [/^(POST|DELETE)$/, /^\/pulls\/\d+\/requested_reviewers$/, 'reviewers'],
  [/^POST$/, /^\/pulls\/\d+\/merge$/, 'merge'],
  [/^POST$/, /^\/releases$/, 'release'],
];

/** Gitea and Forgejo: the API at `<GITEA_URL>/api/v1`, git at `<GITEA_CLONE_URL or GITEA_URL>/<owner>/<repo>.git`. */
export function giteaDialect(options: { forgeUrl: string; gitUrl?: string }): ForgeDialect {
  const forge = options.forgeUrl.replace(/\/+$/, '');
  const gitBase = (options.gitUrl ?? options.forgeUrl).replace(/\/+$/, '');
  const repository = (run: Run) => `${forge}/api/v1/repos/${encodeURIComponent(run.owner)}/${encodeURIComponent(run.repo)}`;
  return {
    name: 'Gitea',
    credentialVariable: 'GITEA_TOKEN',
    apiBase: `${forge}/api/v1`,
    apiPrefix: '/api/v1',
    targetOf(path, service, run) {
      if (GLOBAL_READS.has(path)) return { kind: 'global' };
      const api = /^\/api\/v1\/repos\/([^/]+)\/([^/]+)(\/.*)?$/.exec(path);
      if (!api) return gitTargetOf(path, service, run);
      const owner = decodeSegment(api[1]!);
      const repo = decodeSegment(api[2]!);
      return owner !== null && repo !== null && isRunRepository(run, owner, repo) ? { kind: 'api', rest: api[3] ?? '' } : null;
    },
    changeOf: (method, rest) => changeIn(CHANGES, method, rest),
    upstreamUrl: (path, target) => `${target.kind === 'git' ? gitBase : forge}${path}`,
    apiAuth: (token) => ({ authorization: `token ${token}` }),
    // Gitea's basic auth takes the user name as a token when the password is "x-oauth-basic".
    gitAuth: (token) => basic(token, 'x-oauth-basic'),
    repositoryUrl: repository,
    branchUrl: (run, branch) => `${repository(run)}/branches/${encodeURIComponent(branch)}`,
    pullUrl: (run, number) => `${repository(run)}/pulls/${number}`,
    headRefOf: (pull) => (pull as { head?: { ref?: string } } | null)?.head?.ref,
    releaseProblem: (body) =>
      isDraftRelease(body) ? null : 'a release through the gateway must be a draft (publishing one makes its tag)',
  };
}
