import type { CompletionBody } from '../runner-contract/index.js';

export interface AgentOutcome extends CompletionBody {
  /** Whether the completion callback reached the server (a 2xx). */
  callbackDelivered: boolean;
  /** Where the full log was written. */
  logFile: string;
}

export { emptyUsage, addUsage } from '../agents/index.js';
