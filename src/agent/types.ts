import type { AgentStatus, AgentUsage } from '../agents/index.js';

export { AGENT_STATUS, FAILURE_KIND, emptyUsage, addUsage, type AgentStatus, type AgentUsage } from '../agents/index.js';

/** Body of `POST CALLBACK_URL`: the contract with the server. */
export interface CompletionBody {
  status: AgentStatus;
  /** Exit code of the agent process; null when it never ran or was ended by a signal. */
  exitCode: number | null;
  /** The agent's final text on success; on failure a reason a person can act on. */
  summary: string;
  usage: AgentUsage | null;
  costUsd: number | null;
  durationMs: number;
  error?: string;
}

/** Body of `POST PROGRESS_URL`. */
export interface ProgressBody {
  lines: string[];
  usage?: AgentUsage;
  costUsd?: number;
}

export interface AgentOutcome extends CompletionBody {
  /** Whether the completion callback reached the server (a 2xx). */
  callbackDelivered: boolean;
  /** Where the full log was written. */
  logFile: string;
}
