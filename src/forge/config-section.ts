import { httpUrl, mapping, secret, section, text, type ResolveContext } from '../config-schema/index.js';
import { generatedWebhookSecretPath, readGeneratedWebhookSecret } from './webhook-secret.js';

export interface BotAccount {
  username: string;
  /** Absent when no forge is configured. */
  token?: string;
}

export interface GiteaSettings {
  /** Gitea or Forgejo base URL; without it baton posts nothing to the forge. */
  url?: string;
  /**
   * Where workspaces clone forge repositories from: `<cloneUrl>/<owner>/<repo>.git`. Never a
   * payload's `clone_url`: that is the sender's to write.
   * @default url
   * @example "http://gitea.internal:3000" (when workspaces reach the forge by another name)
   */
  cloneUrl?: string;
  /** HMAC secret of the forge's webhooks: WEBHOOK_SECRET, else the one `baton serve` generated. */
  webhookSecret?: string;
  /** Set when `webhookSecret` is the generated one: the file in the data directory that holds it. */
  webhookSecretFile?: string;
  /** Token of a repository admin, for `baton connect` only (hooks need repository admin). */
  adminToken?: string;
}

/** `gitea:` in baton.yaml. */
export const giteaSection = section(
  mapping({
    url: httpUrl({ env: 'GITEA_URL', sensitive: 'credentials', doc: 'Gitea or Forgejo base URL' }),
    cloneUrl: httpUrl({
      env: 'GITEA_CLONE_URL',
      sensitive: 'credentials',
      doc: 'base URL workspaces clone forge repositories from (<base>/<owner>/<repo>.git); GITEA_URL when not set',
    }),
    webhookSecret: secret({
      env: 'WEBHOOK_SECRET',
      doc: 'HMAC secret of the forge webhooks; when not set, baton serve generates one in the data directory (webhook-secret)',
    }),
    adminToken: secret({
      env: 'GITEA_ADMIN_TOKEN',
      doc: 'token of a repository admin, used by baton connect only (webhooks need repository admin); the dev bot token when not set',
    }),
  }),
  (v, ctx: ResolveContext<{ dataDir: string }>): GiteaSettings => {
    // The generated secret (src/forge/webhook-secret.ts) is part of the configuration, so that
    // serve, connect and doctor all sign and verify with the same one.
    const generated = v.webhookSecret ? undefined : readGeneratedWebhookSecret(ctx.deps.dataDir);
    if (!v.url) {
      ctx.warn(
        'GITEA_URL is not set: baton will never post a status comment or check a permission on the forge. ' +
          'Set GITEA_URL (with GITEA_DEV_TOKEN and GITEA_REVIEW_TOKEN) to the Gitea or Forgejo base URL.',
      );
    }
    return {
      url: v.url,
      ...(v.cloneUrl ? { cloneUrl: v.cloneUrl } : {}),
      webhookSecret: v.webhookSecret ?? generated,
      ...(generated ? { webhookSecretFile: generatedWebhookSecretPath(ctx.deps.dataDir) } : {}),
      ...(v.adminToken ? { adminToken: v.adminToken } : {}),
    };
  },
);

const bot = (name: 'dev' | 'review', username: string, does: string) =>
  mapping({
    username: text({ env: `BOT_${name.toUpperCase()}_USERNAME`, default: username, doc: `login of the ${name} bot (${does})` }),
    token: secret({ env: `GITEA_${name.toUpperCase()}_TOKEN`, doc: `forge token of the ${name} bot account` }),
  });

/** `bots:` in baton.yaml: the accounts baton acts as. Their own events never trigger a stage. */
export const botsSection = section(
  mapping({
    dev: bot('dev', 'claude-dev', 'every stage but review-code and test'),
    review: bot('review', 'claude-review', 'review-code and test'),
  }),
  (v, ctx: ResolveContext<{ gitea: GiteaSettings }>): { dev: BotAccount; review: BotAccount } => {
    if (ctx.deps.gitea.url) {
      for (const name of ['dev', 'review'] as const) {
        if (!v[name].token)
          ctx.problem(`${ctx.name(`${name}.token`)} is required when GITEA_URL is set (token of the ${name} bot account)`);
      }
    }
    return {
      dev: { username: v.dev.username, token: v.dev.token },
      review: { username: v.review.username, token: v.review.token },
    };
  },
);
