import type { Config } from './config-types.js';
import { createWebhookHook } from '../event-webhooks/index.js';
import type { ForgeAccounts } from '../forge/index.js';
import type { Logger } from '../log/index.js';
import { createReviewerHook, createStatusCommentHook, type Outbox } from '../outbox/index.js';
import {
  createCallbackTokenChecks,
  createRunEngine,
  createRunQueries,
  type CallbackTokenChecks,
  type RunQueries,
  type RunService,
  type TransitionHook,
} from '../runs/index.js';
import type { Store } from '../store/index.js';

/** The runs as the rest of the app uses them: what changes them, what reads them, what checks a callback's token. */
export interface RunParts {
  engine: RunService;
  runs: RunQueries;
  callbackTokens: CallbackTokenChecks;
}

/**
 * The run engine with the hooks that write outbox entries in its transactions (status comments,
 * event webhooks), and beside it the reads and the callback-token checks over the same store:
 * three objects, so whoever only reads is handed no way to change a run.
 */
export function createRunParts(
  config: Config,
  deps: { store: Store; outbox: Outbox; accounts: ForgeAccounts; webhookSecret: string | undefined; logger: Logger; now: () => number },
): RunParts {
  const { store, outbox } = deps;
  const hooks: TransitionHook[] = [
    createStatusCommentHook({
      templates: config.comments,
      accounts: deps.accounts,
      outbox,
      // Masked in every comment, whatever an agent's summary quotes.
      secrets: [
        config.bots.dev.token,
        config.bots.review.token,
        deps.webhookSecret,
        config.gitea.adminToken,
        config.github.tokens.dev,
        config.github.tokens.review,
        config.github.webhookSecret,
        config.github.app?.privateKey,
        config.gitlab.tokens.dev,
        config.gitlab.tokens.review,
        config.gitlab.webhookSecret,
        config.coder.token,
        config.claude.oauthToken,
      ],
    }),
  ];
  // GitLab sets the review bot's "Request changes" only if it is a reviewer of the merge request.
  hooks.push(createReviewerHook({ accounts: deps.accounts, outbox }));
  if (config.events.webhooks.length > 0) hooks.push(createWebhookHook({ webhooks: config.events.webhooks, enqueue: outbox.enqueue }));
  const engine = createRunEngine({
    store,
    queue: config.queue,
    now: deps.now,
    hooks,
    logger: deps.logger,
    runLog: config.runLog,
    budgets: config.budgets,
    retries: {
      attemptsFor: (stage) => config.pipeline.stages.find((s) => s.name === stage)?.agentAttempts ?? config.limits.agentAttempts ?? 3,
    },
  });
  return {
    engine,
    runs: createRunQueries({ store, concurrency: config.queue.concurrency }),
    callbackTokens: createCallbackTokenChecks(store.db),
  };
}
