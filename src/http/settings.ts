import type { Config } from '../config/index.js';
import { resolveIngressConfig, type WebhooksConfig } from '../ingress/index.js';
import { parseCommentTemplates, type CommentTemplates } from '../outbox/index.js';
import type { Pipeline } from '../pipeline/index.js';
import { parseRunLogConfig, type RunLogLimits } from '../runs/index.js';

/** The baton.yaml sections owned by modules other than config/, parsed and validated together. */
export interface ModuleSettings {
  pipeline: Pipeline;
  webhooks: WebhooksConfig;
  commentTemplates: CommentTemplates;
  runLog: RunLogLimits;
  /** One line per problem, in the same form as config/ problems; empty when all is well. */
  problems: string[];
}

export function resolveModuleSettings(config: Config): ModuleSettings {
  const ingress = resolveIngressConfig(config);
  const comments = parseCommentTemplates(config.file.comments);
  const runLog = parseRunLogConfig(config.file.runLog);
  return {
    pipeline: ingress.pipeline,
    webhooks: ingress.webhooks,
    commentTemplates: comments.templates,
    runLog: runLog.limits,
    problems: [...ingress.problems, ...comments.problems, ...runLog.problems],
  };
}
