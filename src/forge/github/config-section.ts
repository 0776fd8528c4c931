import { httpUrl, mapping, secret, section, type ResolveContext } from '../../config-schema/index.js';
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
  }),
  (v, ctx: ResolveContext<object>): GitHubSettings => {
    if (v.url) {
      // No generated secret as for Gitea: a GitHub webhook is made with the secret it is given,
      // so the operator chooses it, and an unsigned GitHub delivery is never accepted.
      if (!v.webhookSecret) ctx.problem(`${ctx.name('webhookSecret')} is required when GITHUB_URL is set`);
      if (!v.devToken) ctx.problem(`${ctx.name('devToken')} is required when GITHUB_URL is set`);
    }
    const root = v.url?.replace(/\/+$/, '');
    return {
      url: root,
      apiUrl: root ? githubApiUrl(root) : undefined,
      ...(v.cloneUrl ? { cloneUrl: v.cloneUrl.replace(/\/+$/, '') } : {}),
      webhookSecret: v.webhookSecret,
      tokens: { dev: v.devToken, review: v.reviewToken ?? v.devToken },
    };
  },
);
