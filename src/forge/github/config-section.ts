import { httpUrl, Invalid, mapping, secret, section, text, type ResolveContext } from '../../config-schema/index.js';
import { privateKeyProblem } from './app-auth.js';
import { githubApiUrl } from './client.js';

export interface GitHubSettings {
  /** `https://github.com` or a GitHub Enterprise Server root; without it baton serves no GitHub repository. */
  url?: string;
  /** The REST API root made from `url` (`https://api.github.com`, or `<url>/api/v3`). */
  apiUrl?: string;
  /**
   * Where workspaces clone from: `<cloneUrl>/<owner>/<repo>.git`, never a payload's `clone_url`.
   * @default url
   */
  cloneUrl?: string;
  /** HMAC secret of GitHub's webhooks (`X-Hub-Signature-256`). */
  webhookSecret?: string;
  /** Tokens of the bot accounts, by account name (`dev`, `review`). */
  tokens: { dev?: string; review?: string };
  /**
   * The GitHub App the dev bot acts as (`GITHUB_APP_ID`, `GITHUB_APP_PRIVATE_KEY_FILE`), instead
   * of `GITHUB_DEV_TOKEN`; the review bot too unless `GITHUB_REVIEW_TOKEN` is set.
   */
  app?: { id: string; privateKey: string };
}

/** How a bot account acts on GitHub: with its token, as the App, or (not configured) not at all. */
export type GitHubCredential = { token: string } | { app: { id: string; privateKey: string } };

export function githubCredentialOf(settings: GitHubSettings, account: string): GitHubCredential | undefined {
  const token = settings.tokens[account as 'dev' | 'review'];
  if (token) return { token };
  return settings.app && (account === 'dev' || account === 'review') ? { app: settings.app } : undefined;
}

/** `github:` in baton.yaml. */
export const githubSection = section(
  mapping({
    url: httpUrl({ env: 'GITHUB_URL', sensitive: 'credentials', doc: 'https://github.com or a GitHub Enterprise Server root' }),
    cloneUrl: httpUrl({
      env: 'GITHUB_CLONE_URL',
      sensitive: 'credentials',
      doc: 'base URL workspaces clone GitHub repositories from (<base>/<owner>/<repo>.git); GITHUB_URL when not set',
    }),
    webhookSecret: secret({ env: 'GITHUB_WEBHOOK_SECRET', doc: 'secret of the GitHub webhooks (X-Hub-Signature-256)' }),
    devToken: secret({ env: 'GITHUB_DEV_TOKEN', doc: 'GitHub token of the dev bot account' }),
    reviewToken: secret({ env: 'GITHUB_REVIEW_TOKEN', doc: 'GitHub token of the review bot account' }),
    appId: text({ env: 'GITHUB_APP_ID', doc: 'id (or client id) of the GitHub App the dev bot acts as, instead of GITHUB_DEV_TOKEN' }),
    appPrivateKey: secret({
      env: 'GITHUB_APP_PRIVATE_KEY',
      doc: "the GitHub App's private key (PEM); usually GITHUB_APP_PRIVATE_KEY_FILE, the .pem file GitHub gave",
      check: (pem) => {
        const problem = privateKeyProblem(pem);
        return problem ? new Invalid(problem) : undefined;
      },
    }),
  }),
  (v, ctx: ResolveContext<object>): GitHubSettings => {
    if (v.url) {
      // No generated secret as for Gitea: a GitHub webhook is made with the secret it is given,
      // so the operator chooses it, and an unsigned GitHub delivery is never accepted.
      if (!v.webhookSecret) ctx.problem(`${ctx.name('webhookSecret')} is required when GITHUB_URL is set`);
      if (!v.devToken && !v.appId)
        ctx.problem(
          `${ctx.name('devToken')} is required when GITHUB_URL is set, unless the dev bot is a GitHub App: ${ctx.name('appId')} with ${ctx.name('appPrivateKey')}`,
        );
    }
    if (v.devToken && v.appId)
      ctx.problem(
        `${ctx.name('devToken')} and ${ctx.name('appId')} are both set: the dev bot is either a user with a token or the App; set one`,
      );
    if (v.appId && !v.appPrivateKey) ctx.problem(`${ctx.name('appId')} is set without ${ctx.name('appPrivateKey')} (the App's .pem file)`);
    if (v.appPrivateKey && !v.appId) ctx.problem(`${ctx.name('appPrivateKey')} is set without ${ctx.name('appId')}`);
    const root = v.url?.replace(/\/+$/, '');
    return {
      url: root,
      apiUrl: root ? githubApiUrl(root) : undefined,
      ...(v.cloneUrl ? { cloneUrl: v.cloneUrl.replace(/\/+$/, '') } : {}),
      webhookSecret: v.webhookSecret,
      tokens: { dev: v.devToken, review: v.reviewToken ?? v.devToken },
      ...(v.appId && v.appPrivateKey ? { app: { id: v.appId, privateKey: v.appPrivateKey } } : {}),
    };
  },
);
