import { agentsSection } from '../agents/index.js';
import { botsSection, giteaSection, githubSection, gitlabSection } from '../forge/index.js';
import { budgetsSection, limitsSection } from '../budgets/index.js';
import { egressSection } from '../egress/index.js';
import { catchupSection } from '../catchup/index.js';
import { eventsSection } from '../event-webhooks/index.js';
import { dashboardSection, httpSection } from '../http/index.js';
import { webhooksSection } from '../ingress/index.js';
import { commentsSection } from '../outbox/index.js';
import { maintenanceSection, pipelineSection, schedulesSection } from '../pipeline/index.js';
import { cleanupSection, queueSection, runLogSection } from '../runs/index.js';
import { repositoriesSection } from '../repositories/index.js';
import { databaseSection } from '../store/index.js';
import { apiSection } from '../tokens/index.js';
import { claudeSection, coderSection, localSection } from '../workspaces/index.js';

/**
 * Every section of baton.yaml, by its key, each declared by the module that owns it. Adding a
 * setting is a change in that module's section only; a new section is one line here. Either way
 * it is strict, read from the environment where it names a variable, checked in the one pass of
 * loadConfig (so `serve` and `config check` agree), typed in Config and printed by
 * `baton config check`.
 *
 * Order matters: a section is resolved after the sections it depends on (bots after gitea,
 * pipeline after bots). ./config-types.ts checks at compile time that each gets what it asks for.
 */
export const SECTIONS = {
  database: databaseSection,
  queue: queueSection,
  cleanup: cleanupSection,
  runLog: runLogSection,
  limits: limitsSection,
  schedules: schedulesSection,
  maintenance: maintenanceSection,
  gitea: giteaSection,
  bots: botsSection,
  github: githubSection,
  gitlab: gitlabSection,
  coder: coderSection,
  claude: claudeSection,
  agents: agentsSection,
  local: localSection,
  repositories: repositoriesSection,
  api: apiSection,
  http: httpSection,
  dashboard: dashboardSection,
  events: eventsSection,
  pipeline: pipelineSection,
  budgets: budgetsSection,
  egress: egressSection,
  webhooks: webhooksSection,
  catchup: catchupSection,
  comments: commentsSection,
} as const;
