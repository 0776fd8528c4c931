import { claudeAdapter } from './claude.js';
import { codexAdapter } from './codex.js';
import { geminiAdapter } from './gemini.js';
import { opencodeAdapter } from './opencode.js';
import { textAdapter } from './text.js';
import { AGENT_NAMES, type AgentAdapter, type AgentName } from './types.js';

/** Every adapter by name; `claude` is the default agent. */
export const AGENT_ADAPTERS: Readonly<Record<AgentName, AgentAdapter>> = {
  claude: claudeAdapter,
  codex: codexAdapter,
  gemini: geminiAdapter,
  opencode: opencodeAdapter,
  text: textAdapter,
};

export const DEFAULT_AGENT: AgentName = 'claude';

export function isAgentName(name: string): name is AgentName {
  return (AGENT_NAMES as readonly string[]).includes(name);
}

export function agentAdapter(name: AgentName): AgentAdapter {
  return AGENT_ADAPTERS[name];
}

/** Every agent the pipeline may start: the default agent and each stage's. */
export function agentsInUse(defaultAgent: AgentName, stages: ReadonlyArray<{ agent?: AgentName }>): AgentName[] {
  return [...new Set([defaultAgent, ...stages.map((s) => s.agent ?? defaultAgent)])];
}

/** The runner secrets of every agent's credential (lines of BATON_SECRETS_FILE). */
export const AGENT_SECRET_NAMES: readonly string[] = Object.values(AGENT_ADAPTERS).flatMap((a) =>
  a.credential ? [a.credential.secret] : [],
);
