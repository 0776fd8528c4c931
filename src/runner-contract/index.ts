/**
 * The contract between the server and `baton agent`, the runner in a workspace: what a provider
 * writes for a runner (its environment and its secrets) and what the runner reads, and the bodies
 * the runner posts back. Both sides import it from here, so neither imports the other.
 */
export {
  readRunnerSecrets,
  formatRunnerSecrets,
  parseRunnerSecrets,
  RUNNER_SECRETS,
  SECRETS_SOURCE_ENV,
  SecretsError,
  type RunnerSecrets,
  type RunnerSecretName,
  type SecretsIntake,
} from './secrets.js';
export { findCommand } from './find-command.js';
export { agentCommandProblem, agentEnvProblems, parseAgentCommand } from './agent-env.js';
export { AGENT_ENV, formatRunnerEnv, RUNNER_ENV, type RunnerResume, type RunnerRun } from './env.js';
export {
  AGENT_STATUS,
  FAILURE_KIND,
  MAX_PROMPT_CHARS,
  SESSION_ID_FORM,
  type AgentStatus,
  type AgentUsage,
  type AskedQuestion,
  type CompletionBody,
  type ProgressBody,
  type PromptReport,
} from './bodies.js';
export { SETUP_TOKENS, STAGE, type SetupToken } from './stages.js';
