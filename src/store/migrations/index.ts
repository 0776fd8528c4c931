import { core } from './0001-core.js';
import { slotIndex } from './0002-slot-index.js';
import { ingress } from './0010-ingress.js';
import { outbox } from './0015-outbox.js';
import { inbox } from './0045-inbox.js';
import { deliveryReplays } from './0050-delivery-replays.js';
import { apiTokens } from './0040-api-tokens.js';
import { tokenScopes } from './0041-token-scopes.js';
import { dashboardSessions } from './0042-dashboard-sessions.js';
import { forgeSync } from './0052-forge-sync.js';
import { unambiguousRunKeys } from './0055-unambiguous-run-keys.js';
import { callbackTokenHistory } from './0060-callback-token-history.js';
import { runLimits } from './0065-run-limits.js';
import { budgets } from './0066-budgets.js';
import { agentAttempts } from './0067-agent-attempts.js';
import { issueIndex } from './0075-issue-index.js';
import { dropWebhookDeliveries } from './0080-drop-webhook-deliveries.js';
import { claimFunction } from './0085-claim-function.js';
import { claimByIds } from './0086-claim-by-ids.js';
import { costSource } from './0105-cost-source.js';
import { runForge } from './0110-run-forge.js';
import type { Migration } from './types.js';
import { knownRepositories } from './0095-known-repositories.js';
import { conversations } from './0125-conversations.js';
import { forgeFacts } from './0090-forge-facts.js';
import { runsListIndexes } from './0120-runs-list-indexes.js';
import { queueCountsIndex } from './0121-queue-counts-index.js';
import { runsSearch } from './0140-runs-search.js';

export type { Migration } from './types.js';

/**
 * Every migration, in the order they apply. Numbering blocks keep parallel work apart:
 * 0001–0009 core, 0010–0019 forge/ingress/outbox, 0020–0029 workspaces,
 * 0030–0039 agent/callbacks, 0040–0049 operator surfaces (0045–0049: the ingress inbox), 0050–0051 the deliveries inspector,
 * 0052–0054 catch-up,
 * 0055–0059 trust boundary (run keys), 0060–0064 crash recovery, 0065–0074 limits, budgets and retries,
 * 0075–0079 the issue and usage views, 0080–0084 clean-ups,
 * 0085–0089 the PostgreSQL hot path, 0090–0094 nothing lost (forge facts), 0095–0099 the forge gateway and who may steer runs,
 * 0105–0109 agents (cost source), 0120–0124 the runs list (filters, search, keyset pages), 0125–0134 conversations,
 * 0140–0144 the runs list's text search.
 */
export const migrations: readonly Migration[] = [
  core,
  slotIndex,
  ingress,
  outbox,
  apiTokens,
  tokenScopes,
  dashboardSessions,
  inbox,
  deliveryReplays,
  forgeSync,
  unambiguousRunKeys,
  callbackTokenHistory,
  runLimits,
  budgets,
  agentAttempts,
  issueIndex,
  dropWebhookDeliveries,
  claimFunction,
  claimByIds,
  knownRepositories,
  runForge,
  costSource,
  conversations,
  forgeFacts,
  runsListIndexes,
  queueCountsIndex,
  runsSearch,
].sort((a, b) => a.name.localeCompare(b.name));
