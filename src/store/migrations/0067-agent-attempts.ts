import type { Migration } from './types.js';

/**
 * Retries of agent runs: which attempt of its agent a run is on (1 = the first). A transient
 * failure (the agent API overloaded or rate-limited, the network, the workspace lost) queues the
 * run again with this one higher, until the stage's attempts are used up.
 */
export const agentAttempts: Migration = {
  name: '0067-agent-attempts',
  sqlite: [`ALTER TABLE runs ADD COLUMN agent_attempt INTEGER NOT NULL DEFAULT 1`],
  postgres: [`ALTER TABLE runs ADD COLUMN agent_attempt INTEGER NOT NULL DEFAULT 1`],
};
