import type { Config } from './config-types.js';
import { ensureGeneratedWebhookSecret } from '../forge/index.js';
import type { Logger } from '../log/index.js';

/** Shows a secret generated on this start to the operator, once. */
export type AnnounceWebhookSecret = (secret: string, details: { file: string; webhookUrl: string }) => void;

/**
 * The secret the webhook endpoints verify with: `WEBHOOK_SECRET` (or the one an earlier start
 * generated, which the configuration has read), else one generated now into the data directory
 * and handed over once. None when the operator accepts unsigned deliveries
 * (`webhooks.allowUnsigned`) or there is no forge to send webhooks (no GITEA_URL): a secret
 * nobody can paste anywhere would only be noise.
 */
export function webhookSecretFor(
  config: Pick<Config, 'gitea' | 'webhooks' | 'dataDir' | 'publicUrl' | 'callbackUrl'>,
  options: { logger: Pick<Logger, 'warn'>; announce?: AnnounceWebhookSecret },
): string | undefined {
  if (config.gitea.webhookSecret) return config.gitea.webhookSecret;
  if (config.webhooks.allowUnsigned || !config.gitea.url) return undefined;
  const { secret, file, created } = ensureGeneratedWebhookSecret(config.dataDir);
  if (created) {
    const details = { file, webhookUrl: `${config.publicUrl ?? config.callbackUrl}/webhook/gitea` };
    (options.announce ?? ((s, d) => announceWebhookSecret(s, { ...d, logger: options.logger })))(secret, details);
  }
  return secret;
}

/**
 * Like the first admin token (./first-token.ts), never through the log stream: on the terminal
 * when stderr is one; otherwise the log says where the 0600 file is, not what is in it.
 */
export function announceWebhookSecret(
  secret: string,
  options: {
    file: string;
    webhookUrl: string;
    logger: Pick<Logger, 'warn'>;
    terminal?: Pick<NodeJS.WriteStream, 'isTTY' | 'write'>;
  },
): void {
  const terminal = options.terminal ?? process.stderr;
  if (terminal.isTTY) {
    terminal.write(
      `\nbaton: WEBHOOK_SECRET is not set, so baton generated one and keeps it in ${options.file} (mode 0600); later starts use it.\n` +
        'Give it to the repository webhook in Gitea (Settings > Webhooks > Add webhook > Gitea), or let "baton connect OWNER/REPO" do it:\n\n' +
        `  Target URL:    ${options.webhookUrl}\n  Content type:  application/json\n  Secret:        ${secret}\n\n` +
        'Deliveries without this signature are answered 401.\n\n',
    );
    return;
  }
  options.logger.warn(
    { file: options.file, webhookUrl: options.webhookUrl },
    `WEBHOOK_SECRET is not set: baton generated one in ${options.file} (mode 0600), which later starts use. ` +
      `Put it in the Gitea webhook for ${options.webhookUrl} (or run baton connect OWNER/REPO); deliveries without it are answered 401.`,
  );
}
