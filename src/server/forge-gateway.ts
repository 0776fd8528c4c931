import {
  forgeGatewayRoutes,
  giteaDialect,
  githubDialect,
  gitlabDialect,
  type ForgeGatewayDeps,
  type GatewayForge,
  type GatewayToken,
} from '../forge-gateway/index.js';
import type { Hono } from 'hono';
import { githubCredentialOf, type GitHubAppAuth } from '../forge/index.js';
import { mayMergeOf, pushRulesOf } from '../pipeline/index.js';
import type { Config } from './config-types.js';

/**
 * Baton's forge gateway over every configured forge: Gitea/Forgejo at `GITEA_URL`, GitHub at its
 * API root, GitLab at `<GITLAB_URL>/api/v4`, each with its bots' tokens; git goes to the forge's
 * clone URL when that is http(s), else to its root. None configured: no gateway.
 */
export function createForgeGateway(
  config: Config,
  deps: Pick<ForgeGatewayDeps, 'callbackTokens' | 'engine' | 'logger'> & { githubApp?: GitHubAppAuth },
): Hono | undefined {
  const forges: ForgeGatewayDeps['forges'] = {};
  const httpOnly = (url: string | undefined) => (url && /^https?:\/\//i.test(url) ? url : undefined);
  if (config.gitea.url) {
    forges.gitea = {
      // Runs clone the forge's copy at GITEA_CLONE_URL when it is set (over http(s)).
      dialect: giteaDialect({ forgeUrl: config.gitea.url, gitUrl: httpOnly(config.gitea.cloneUrl) }),
      tokens: { dev: config.bots.dev.token, review: config.bots.review.token },
    };
  }
  const githubToken = (account: 'dev' | 'review'): GatewayToken | undefined => {
    const credential = githubCredentialOf(config.github, account);
    const app = deps.githubApp;
    if (credential && 'token' in credential) return credential.token;
    return credential && app ? app : undefined;
  };
  if (config.github.url && config.github.apiUrl) {
    forges.github = {
      dialect: githubDialect({ apiUrl: config.github.apiUrl, gitUrl: httpOnly(config.github.cloneUrl) ?? config.github.url }),
      // A GitHub App's bot gets a token of the run's repository alone, minted when needed.
      tokens: { dev: githubToken('dev'), review: githubToken('review') },
    } satisfies GatewayForge;
  }
  if (config.gitlab.url && config.gitlab.apiUrl) {
    forges.gitlab = {
      dialect: gitlabDialect({ apiUrl: config.gitlab.apiUrl, gitUrl: httpOnly(config.gitlab.cloneUrl) ?? config.gitlab.url }),
      tokens: config.gitlab.tokens,
    };
  }
  if (Object.keys(forges).length === 0) return undefined;
  const { githubApp: _app, ...gatewayDeps } = deps;
  return forgeGatewayRoutes({
    forges,
    ...gatewayDeps,
    // A stage that is no longer in the table (renamed while its run lives) gets the defaults by its name.
    rightsOf: (run) => {
      const stage = config.pipeline.stages.find((s) => s.name === run.stage) ?? { name: run.stage };
      return { push: pushRulesOf(stage), merge: mayMergeOf(stage) };
    },
  });
}
