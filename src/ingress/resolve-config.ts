import type { Config } from '../config/index.js';
import { parsePipelineConfig, type Pipeline } from '../pipeline/index.js';
import { parseWebhooksConfig, type WebhooksConfig } from './webhooks-config.js';

/**
 * The ingress settings from a loaded Config: `pipeline:` and `webhooks:` of baton.yaml, the bot
 * accounts and WEBHOOK_SECRET. A caller should refuse to start when `problems` is not empty.
 */
export function resolveIngressConfig(config: Pick<Config, 'file' | 'bots' | 'gitea'>): {
  pipeline: Pipeline;
  webhooks: WebhooksConfig;
  secret?: string;
  problems: string[];
} {
  const pipeline = parsePipelineConfig(config.file.pipeline, config.bots);
  const webhooks = parseWebhooksConfig(config.file.webhooks);
  return {
    pipeline: pipeline.pipeline,
    webhooks: webhooks.webhooks,
    secret: config.gitea.webhookSecret,
    problems: [...pipeline.problems, ...webhooks.problems],
  };
}
