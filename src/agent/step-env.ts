import { agentAdapter, type AgentAdapter, type AgentName, type AgentSession } from '../agents/index.js';
import { forgeEnv } from './forge-env.js';
import type { RunAgentOptions } from './run-agent-options.js';

// The environments of a run's steps. The agent must not be able to report the run's outcome
// itself (no CALLBACK_TOKEN), and the repository's install and build scripts get no token the
// stage did not grant them: every step starts from baton's environment without any secret and is
// given only its own.

/** Never inherited by a step: each gets the secrets it needs explicitly. */
const SECRET_ENV = [
  'ANTHROPIC_API_KEY',
  'OPENAI_API_KEY',
  'CODEX_API_KEY',
  'GEMINI_API_KEY',
  'GOOGLE_API_KEY',
  'GOOGLE_GENERATIVE_AI_API_KEY',
  'OPENCODE_API_KEY',
  'OPENROUTER_API_KEY',
  'CALLBACK_TOKEN',
  'GITEA_TOKEN',
  // The forge variables the runner sets itself (forge-env.ts): never taken from baton's environment.
  'GH_TOKEN',
  'GITHUB_TOKEN',
  'GH_ENTERPRISE_TOKEN',
  'GITHUB_ENTERPRISE_TOKEN',
  'GITLAB_TOKEN',
  'CLAUDE_CODE_OAUTH_TOKEN',
  'BATON_SECRETS_FD',
  'BATON_SECRETS_FILE',
];

export interface StepEnvironments {
  agentName: AgentName;
  adapter: AgentAdapter;
  /** The runner's environment without any secret: the base of every step. */
  secretFree(): NodeJS.ProcessEnv;
  /** Only this agent's credential, in the variables its CLI reads: another agent's never reaches it. */
  credential(session: AgentSession): NodeJS.ProcessEnv;
  /** What the install and build commands get besides: the tokens the stage grants (`setupTokens`). */
  setup: NodeJS.ProcessEnv;
}

export function stepEnvironments(options: RunAgentOptions, gitEnv: NodeJS.ProcessEnv): StepEnvironments {
  const agentName: AgentName = options.outputFormat === 'text' ? 'text' : (options.agent ?? 'claude');
  const adapter = agentAdapter(agentName);
  const agentSecret = agentName === 'claude' ? options.claudeOauthToken : options.agentSecret;
  const credential = (session: AgentSession) => adapter.credentialEnv(agentSecret, session);
  const setupTokens = options.setupTokens ?? [];
  return {
    agentName,
    adapter,
    secretFree() {
      const env = { ...options.env };
      for (const name of SECRET_ENV) delete env[name];
      return env;
    },
    credential,
    setup: {
      ...(setupTokens.includes('forge') ? { ...gitEnv, ...forgeEnv(options.env, options.forgeToken) } : {}),
      ...(setupTokens.includes('agent')
        ? credential({ allowedTools: null, model: options.model ?? null, skipPermissions: options.skipPermissions ?? true })
        : {}),
    },
  };
}
