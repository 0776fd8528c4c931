import { RUNNER_ENV } from '../runner-contract/index.js';

/**
 * The forge variables of the agent (and of setup steps granted the forge token): `GITEA_TOKEN` on
 * every forge (the prompts and existing tools use it), and on GitHub and GitLab the run's
 * capability and the gateway's API root in the names their tools read. The capability is worth
 * something only at baton's forge gateway (`GITEA_URL` of the run), whatever name carries it.
 *
 * - GitHub: `GH_TOKEN` and `GITHUB_TOKEN` (gh, "gh help environment": in that order of precedence;
 *   Octokit-based scripts read `GITHUB_TOKEN`), `GITHUB_API_URL` (the REST root GitHub Actions
 *   sets, "Variables reference": read by @actions/github, Octokit plugins and many scripts), and
 *   `GITHUB_REPOSITORY` (`owner/repo`, as Actions sets it). No `GH_HOST`: gh takes a host name
 *   only, speaks https to it and does most of its work in GraphQL, which the gateway refuses.
 * - GitLab: `GITLAB_TOKEN` and `GITLAB_HOST` (glab, "glab" environment variables: a URL; its
 *   REST root is `<host>/api/v4/`, the path kept, gl-cli/glab internal/glinstance/host.go),
 *   `CI_API_V4_URL`, `CI_SERVER_URL` and `CI_PROJECT_PATH` (GitLab CI's predefined variables,
 *   which python-gitlab and CI scripts read). Not `CI` nor `GITLAB_CI`: tools would take the run
 *   for a CI job and look for a job token.
 */
export function forgeEnv(env: NodeJS.ProcessEnv, forgeToken: string | undefined): NodeJS.ProcessEnv {
  if (!forgeToken) return {};
  const base = env[RUNNER_ENV.forgeUrl]?.replace(/\/+$/, '');
  const owner = env[RUNNER_ENV.owner];
  const repo = env[RUNNER_ENV.repo];
  const path = owner && repo ? `${owner}/${repo}` : undefined;
  const forge = env[RUNNER_ENV.forge];
  if (forge === 'github' && base) {
    return {
      GITEA_TOKEN: forgeToken,
      GH_TOKEN: forgeToken,
      GITHUB_TOKEN: forgeToken,
      GITHUB_API_URL: `${base}/api/v3`,
      ...(path ? { GITHUB_REPOSITORY: path } : {}),
    };
  }
  if (forge === 'gitlab' && base) {
    return {
      GITEA_TOKEN: forgeToken,
      GITLAB_TOKEN: forgeToken,
      GITLAB_HOST: base,
      CI_API_V4_URL: `${base}/api/v4`,
      CI_SERVER_URL: base,
      ...(path ? { CI_PROJECT_PATH: path } : {}),
    };
  }
  return { GITEA_TOKEN: forgeToken };
}
