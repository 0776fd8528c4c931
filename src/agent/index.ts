export { runAgent, DEFAULT_MAX_DURATION_MS, formatDuration, type RunAgentOptions } from './run-agent.js';
export { nestedSandboxProblem, nestedSandboxSpawn } from './step-sandbox.js';
export { checkRunner, type RunnerCheck } from './check.js';
export { gatedFetch, startEgressBridge } from './egress-bridge.js';
export { probeUnreachable } from './network-probe.js';
export { resolvePrompt, parseCommandFile, promptArguments, defaultAssetsDir, type ResolvedPrompt } from './prompt.js';
export {
  CLAUDE_COMMAND,
  PROMPT_ARGUMENT_MAX_BYTES,
  claudeInvocation,
  templateInvocation,
  sessionFromFrontMatter,
  createStreamParser,
  judgeResult,
  type ClaudeSession,
  type AgentInvocation,
  type StreamParser,
  type ResultSummary,
  type ResultOutcome,
} from '../agents/index.js';
export { createCallbackClient, createProgressReporter, deriveProgressUrl, type CallbackClient } from './callback-client.js';
export { startLogServer, type LogServer } from './log-server.js';
export { createLineSplitter, type LineSplitter } from './process-group.js';
export { STAGES, HEAVY_STAGES, isHeavyStage, isBuiltInStage, type StageName } from './stages.js';
export { RunFailure, CommandFileError, CheckoutError, SetupCommandError } from './errors.js';
export type { AgentOutcome } from './types.js';
