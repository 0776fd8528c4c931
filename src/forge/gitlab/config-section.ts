import { httpUrl, mapping, secret, section, type ResolveContext } from '../../config-schema/index.js';
import { gitlabApiUrl } from './client.js';

export interface GitLabSettings {
  /** `https://gitlab.com` or a self-managed GitLab's root; without it baton serves no GitLab project. */
  url?: string;
  /** The REST API root made from `url` (`<url>/api/v4`). */
  apiUrl?: string;
  /**
   * Where workspaces clone from: `<cloneUrl>/<namespace>/<project>.git`, never a payload's `git_http_url`.
   * @default url
   */
  cloneUrl?: string;
  /** The secret token of GitLab's webhooks (`X-Gitlab-Token`, compared in constant time). */
  webhookSecret?: string;
  /** Tokens of the bot accounts, by account name (`dev`, `review`). */
  tokens: { dev?: string; review?: string };
}

/** `gitlab:` in baton.yaml. */
export const gitlabSection = section(
  mapping({
    url: httpUrl({ env: 'GITLAB_URL', sensitive: 'credentials', doc: 'https://gitlab.com or a self-managed GitLab root' }),
    cloneUrl: httpUrl({
      env: 'GITLAB_CLONE_URL',
      sensitive: 'credentials',
      doc: 'base URL workspaces clone GitLab projects from (<base>/<namespace>/<project>.git); GITLAB_URL when not set',
    }),
    webhookSecret: secret({ env: 'GITLAB_WEBHOOK_SECRET', doc: 'secret token of the GitLab webhooks (X-Gitlab-Token)' }),
    devToken: secret({ env: 'GITLAB_DEV_TOKEN', doc: 'GitLab access token (api scope) of the dev bot account' }),
    reviewToken: secret({ env: 'GITLAB_REVIEW_TOKEN', doc: 'GitLab access token (api scope) of the review bot account' }),
  }),
  (v, ctx: ResolveContext<object>): GitLabSettings => {
    if (v.url) {
      // As for GitHub: the operator gives the hook its token, and a delivery without it is refused.
      if (!v.webhookSecret) ctx.problem(`${ctx.name('webhookSecret')} is required when GITLAB_URL is set`);
      if (!v.devToken) ctx.problem(`${ctx.name('devToken')} is required when GITLAB_URL is set`);
    }
    const root = v.url?.replace(/\/+$/, '');
    return {
      url: root,
      apiUrl: root ? gitlabApiUrl(root) : undefined,
      ...(v.cloneUrl ? { cloneUrl: v.cloneUrl.replace(/\/+$/, '') } : {}),
      webhookSecret: v.webhookSecret,
      tokens: { dev: v.devToken, review: v.reviewToken ?? v.devToken },
    };
  },
);
