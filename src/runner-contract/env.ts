import type { SetupToken } from './stages.js';

/**
 * The environment variables `baton agent` reads, by what they carry. A provider sets the run's
 * (`formatRunnerEnv`); a workspace template or the operator sets the rest. Secrets are never among
 * them: they go through `formatRunnerSecrets`.
 */
export const RUNNER_ENV = {
  stage: 'TASK_TYPE',
  issueNumber: 'ISSUE_NUMBER',
  forgeUrl: 'GITEA_URL',
  /** The forge the repository is on (`gitea`, `forgejo`, `github`, `gitlab`): which forge variables the agent gets. */
  forge: 'BATON_FORGE',
  owner: 'GITEA_ORG',
  repo: 'GITEA_REPO',
  cloneUrl: 'REPO_CLONE_URL',
  arguments: 'BATON_ARGUMENTS',
  branch: 'BATON_BRANCH',
  deployEnv: 'DEPLOY_ENV',
  callbackUrl: 'CALLBACK_URL',
  progressUrl: 'PROGRESS_URL',
  runId: 'BATON_RUN_ID',
  maxDurationMs: 'BATON_MAX_DURATION_MS',
  tokenCap: 'BATON_TOKEN_CAP',
  stageBuild: 'BATON_STAGE_BUILD',
  setupTokens: 'BATON_SETUP_TOKENS',
  skipPermissions: 'BATON_STAGE_SKIP_PERMISSIONS',
  workdir: 'BATON_WORKDIR',
  sandbox: 'BATON_SANDBOX',
  logPort: 'BATON_AGENT_LOG_PORT',
  logHost: 'BATON_AGENT_LOG_HOST',
  agent: 'BATON_AGENT',
  agentModel: 'BATON_AGENT_MODEL',
  agentPrice: 'BATON_AGENT_PRICE',
  agentCommand: 'BATON_AGENT_COMMAND',
  agentOutput: 'BATON_AGENT_OUTPUT',
  installCommand: 'BATON_INSTALL_COMMAND',
  buildCommand: 'BATON_BUILD_COMMAND',
  callbackMaxRetryMs: 'BATON_CALLBACK_MAX_RETRY_MS',
  killGraceMs: 'BATON_KILL_GRACE_MS',
  /** The run's egress gate: a unix socket (local provider) and the port of 127.0.0.1 the runner relays to it. */
  egressSocket: 'BATON_EGRESS_SOCKET',
  egressPort: 'BATON_EGRESS_PORT',
  /** `host:port,…` that `--check` must find unreachable: baton's port, its database. */
  checkUnreachable: 'BATON_CHECK_UNREACHABLE',
  /**
   * A resumed turn of a conversation (runs/conversation.ts): the agent CLI's session to resume,
   * the reply that is its prompt, and who wrote it. The transcript itself the runner reads back
   * from the server (`GET /api/runs/:id/transcript`).
   */
  resumeSessionId: 'BATON_RESUME_SESSION_ID',
  resumeReply: 'BATON_RESUME_REPLY',
  resumeBy: 'BATON_RESUME_BY',
} as const;

/**
 * What the runner sets for the agent's own processes: \`baton ask\` (on the agent's PATH) records
 * the question in this file; when the agent ends, the runner reports the run as waiting.
 */
export const AGENT_ENV = {
  questionFile: 'BATON_QUESTION_FILE',
} as const;

/** What the server tells a runner about its run. Absent values are not set. */
export interface RunnerRun {
  stage: string;
  runId: number;
  issueNumber?: number;
  forgeUrl?: string;
  /** @default 'gitea' (not set) */
  forge?: string;
  owner?: string;
  repo?: string;
  cloneUrl?: string;
  arguments?: string;
  branch?: string;
  deployEnv?: string;
  callbackUrl?: string;
  maxDurationMs?: number;
  tokenCap?: number;
  stageBuild?: 'light' | 'heavy';
  setupTokens?: readonly SetupToken[];
  skipPermissions?: boolean;
  /** The stage's agent (claude, codex, gemini, opencode, text) and model. */
  agent?: string;
  agentModel?: string;
  /** The argv prefix of the stage's agent, when the configuration names one. */
  agentCommand?: readonly string[];
  /** USD per million tokens for an agent whose CLI reports no cost. */
  agentPrice?: { input: number; cachedInput?: number; output: number; cacheWrite?: number };
  /** A reply resumes the agent's session (a conversation's next turn). */
  resume?: RunnerResume;
}

export interface RunnerResume {
  sessionId: string;
  /** The reply, the next turn's prompt. */
  reply: string;
  /** Who replied (a forge login). */
  by: string;
}

/** The variables of a run, as `baton agent` reads them; absent and empty values are left out. */
export function formatRunnerEnv(run: RunnerRun): Record<string, string> {
  const env: Record<string, string | undefined> = {
    [RUNNER_ENV.stage]: run.stage,
    [RUNNER_ENV.issueNumber]: run.issueNumber?.toString(),
    [RUNNER_ENV.forgeUrl]: run.forgeUrl,
    [RUNNER_ENV.forge]: run.forge,
    [RUNNER_ENV.owner]: run.owner,
    [RUNNER_ENV.repo]: run.repo,
    [RUNNER_ENV.cloneUrl]: run.cloneUrl,
    [RUNNER_ENV.arguments]: run.arguments,
    [RUNNER_ENV.branch]: run.branch,
    [RUNNER_ENV.deployEnv]: run.deployEnv,
    [RUNNER_ENV.callbackUrl]: run.callbackUrl,
    [RUNNER_ENV.runId]: String(run.runId),
    [RUNNER_ENV.maxDurationMs]: run.maxDurationMs?.toString(),
    [RUNNER_ENV.tokenCap]: run.tokenCap?.toString(),
    [RUNNER_ENV.stageBuild]: run.stageBuild,
    [RUNNER_ENV.setupTokens]: run.setupTokens?.join(','),
    [RUNNER_ENV.skipPermissions]: run.skipPermissions?.toString(),
    [RUNNER_ENV.agent]: run.agent,
    [RUNNER_ENV.agentModel]: run.agentModel,
    [RUNNER_ENV.agentCommand]: run.agentCommand ? JSON.stringify(run.agentCommand) : undefined,
    [RUNNER_ENV.agentPrice]: run.agentPrice ? JSON.stringify(run.agentPrice) : undefined,
    [RUNNER_ENV.resumeSessionId]: run.resume?.sessionId,
    [RUNNER_ENV.resumeReply]: run.resume?.reply,
    [RUNNER_ENV.resumeBy]: run.resume?.by,
  };
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined && e[1] !== ''));
}
