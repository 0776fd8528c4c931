export * from './types.js';
export { ForgeError, isRetryableStatus } from './errors.js';
export { createGiteaClient, normalizeLabelColor, type GiteaClientOptions } from './gitea/index.js';
export { createForgeAccounts, accountKey, type ForgeAccounts, type ForgeAccountsOptions } from './accounts.js';
export {
  createGitHubAppAuth,
  createGitHubAppClient,
  createGitHubClient,
  gitHubAppJwt,
  githubApiUrl,
  type GitHubAppAuth,
  type GitHubAppIdentity,
  type GitHubClientOptions,
} from './github/index.js';
export { githubCredentialOf, githubSection, type GitHubCredential, type GitHubSettings } from './github/config-section.js';
export { createGitLabClient, gitlabApiUrl, type GitLabClientOptions } from './gitlab/index.js';
export { gitlabSection, type GitLabSettings } from './gitlab/config-section.js';
export { giteaSection, botsSection, type BotAccount, type GiteaSettings } from './config-section.js';
export { planHook, missingLabels, type HookPlan } from './onboarding.js';
export {
  ensureGeneratedWebhookSecret,
  generatedWebhookSecretPath,
  readGeneratedWebhookSecret,
  GENERATED_WEBHOOK_SECRET_FILE,
} from './webhook-secret.js';
