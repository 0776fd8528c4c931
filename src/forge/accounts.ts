import type { ResolvedOf } from '../config-schema/index.js';
import type { ForgeName } from '../runs/index.js';
import type { botsSection, giteaSection } from './config-section.js';
import type { githubSection } from './github/config-section.js';
import type { gitlabSection } from './gitlab/config-section.js';
import { createGiteaClient } from './gitea/index.js';
import { githubCredentialOf } from './github/config-section.js';
import { createGitHubAppAuth, createGitHubAppClient, createGitHubClient, type GitHubAppAuth } from './github/index.js';
import { createGitLabClient } from './gitlab/index.js';
import type { ForgeClient } from './types.js';

/**
 * One client per bot account: Gitea's by the account's name (`dev`, `review`), as always; the
 * other forges' by `forge:name` (`github:dev`), see `accountKey`. Only accounts that have a token
 * appear.
 */
export type ForgeAccounts = Readonly<Partial<Record<string, ForgeClient>>>;

export interface ForgeAccountsOptions {
  /** @default globalThis.fetch */
  fetch?: typeof globalThis.fetch;
  /** @default 15_000 */
  timeoutMs?: number;
  /** The GitHub App's authentication when `github.app` is set, shared with the forge gateway (one token cache); made here when not given. */
  githubApp?: GitHubAppAuth;
}

/** The key of a bot account's client in `ForgeAccounts`: `dev` on Gitea and Forgejo, `github:dev` on GitHub. */
export function accountKey(forge: ForgeName | undefined, account: string): string {
  return forge === 'github' || forge === 'gitlab' ? `${forge}:${account}` : account;
}

/**
 * The dev bot acts with `GITEA_DEV_TOKEN`, the review bot with `GITEA_REVIEW_TOKEN`
 * (`config.bots`); on GitHub with `GITHUB_DEV_TOKEN` and `GITHUB_REVIEW_TOKEN`, on GitLab with
 * `GITLAB_DEV_TOKEN` and `GITLAB_REVIEW_TOKEN`. On GitHub the dev bot may be a GitHub App
 * instead (`GITHUB_APP_ID`), and the review bot too when it has no token. A forge whose URL is
 * not set has no accounts.
 */
export function createForgeAccounts(
  config: {
    gitea: ResolvedOf<typeof giteaSection>;
    bots: ResolvedOf<typeof botsSection>;
    github?: ResolvedOf<typeof githubSection>;
    gitlab?: ResolvedOf<typeof gitlabSection>;
  },
  options: ForgeAccountsOptions = {},
): ForgeAccounts {
  const accounts: Record<string, ForgeClient> = {};
  const common = { fetch: options.fetch, timeoutMs: options.timeoutMs };
  const baseUrl = config.gitea.url;
  if (baseUrl) {
    for (const [name, bot] of Object.entries(config.bots)) {
      if (bot.token) accounts[name] = createGiteaClient({ baseUrl, token: bot.token, ...common });
    }
  }
  const github = config.github;
  if (github?.apiUrl) {
    const apiUrl = github.apiUrl;
    let app: ForgeClient | undefined;
    for (const name of ['dev', 'review']) {
      const credential = githubCredentialOf(github, name);
      if (!credential) continue;
      if ('token' in credential) accounts[accountKey('github', name)] = createGitHubClient({ apiUrl, token: credential.token, ...common });
      else {
        app ??= createGitHubAppClient(
          options.githubApp ?? createGitHubAppAuth({ apiUrl, appId: credential.app.id, privateKey: credential.app.privateKey, ...common }),
          { apiUrl, ...common },
        );
        accounts[accountKey('github', name)] = app;
      }
    }
  }
  const gitlab = config.gitlab;
  if (gitlab?.url) {
    const rootUrl = gitlab.url;
    for (const [name, token] of Object.entries(gitlab.tokens)) {
      if (token) accounts[accountKey('gitlab', name)] = createGitLabClient({ rootUrl, token, ...common });
    }
  }
  return Object.freeze(accounts);
}
