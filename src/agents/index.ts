export {
  AGENT_NAMES,
  type AgentName,
  type AgentAdapter,
  type AgentInvocation,
  type AgentSession,
  type AgentStream,
  type StreamOutcome,
  type AgentCredential,
  type AgentExit,
} from './types.js';
export { AGENT_ADAPTERS, AGENT_SECRET_NAMES, DEFAULT_AGENT, agentAdapter, agentsInUse, isAgentName } from './registry.js';
export { AGENT_STATUS, FAILURE_KIND, emptyUsage, addUsage, type AgentStatus, type AgentUsage } from './outcome.js';
export { RunFailure, CommandFileError } from './errors.js';
export {
  CLAUDE_COMMAND,
  PROMPT_ARGUMENT_MAX_BYTES,
  BATON_ASK_TOOLS,
  BATON_MCP_CONFIG,
  claudeInvocation,
  templateInvocation,
  sessionFromFrontMatter,
  neutraliseSlash,
  type ClaudeSession,
} from './invocation.js';
export {
  createStreamParser,
  judgeResult,
  apiFailureKind,
  type StreamParser,
  type ResultSummary,
  type ResultOutcome,
} from './claude-stream.js';
export { failureKindFromText } from './common.js';
export { GEMINI_EXIT } from './gemini.js';
export { agentsSection, MODEL_NAME, type AgentsConfig, type AgentSettings } from './config-section.js';
export {
  countCost,
  DEFAULT_PRICES,
  findPrice,
  priceUsage,
  REPORTED_COST_TOLERANCE,
  type CountedCost,
  type ModelPrice,
  type PriceTable,
} from './pricing.js';
export { MAX_ENTRIES, MAX_ENTRY_CHARS, TRANSCRIPT_ENTRY_KIND, transcriptEntries, type TranscriptEntry } from './transcript-entries.js';
