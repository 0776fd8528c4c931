import type { AgentUsage, CompletionBody } from '../runner-contract/index.js';

export interface AgentOutcome extends CompletionBody {
  /** Whether the completion callback reached the server (a 2xx). */
  callbackDelivered: boolean;
  /** Where the full log was written. */
  logFile: string;
}

export function emptyUsage(): AgentUsage {
  return { inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };
}

export function addUsage(a: AgentUsage, b: AgentUsage): AgentUsage {
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    cacheReadInputTokens: a.cacheReadInputTokens + b.cacheReadInputTokens,
    cacheCreationInputTokens: a.cacheCreationInputTokens + b.cacheCreationInputTokens,
  };
}
