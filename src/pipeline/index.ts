export * from './types.js';
export { route, newlyPresentLabels, deployEnvOf, IGNORE_REASON, LABEL_COMPARING_KINDS } from './route.js';
export { parsePipelineConfig, pipelineSection, schedulesSection, maintenanceSection, type MaintenanceRepo } from './config-section.js';
export { maintenanceRequests } from './maintenance.js';
export {
  DEFAULT_LABELS,
  DEFAULT_DEPLOY,
  DEFAULT_SKIP_PERMISSIONS,
  DEFAULT_SUCCESS,
  successOf,
  DEFAULT_PUSH,
  DEFAULT_PUSH_RULES,
  DEFAULT_MERGE,
  pushRulesOf,
  mayMergeOf,
  DEPLOY_ENV_PATTERN,
  defaultStages,
  defaultPipeline,
  type LabelRole,
} from './stages.js';
export { manualRequest, type ManualRun } from './manual.js';
export { webhookEventsFor, pipelineLabels, type PipelineLabel } from './onboarding.js';
export {
  commandOf,
  parseCommand,
  chatHelp,
  commandRequest,
  CHAT_COMMANDS,
  DEFAULT_MENTION,
  MAX_COMMAND_TEXT,
  type ChatCommand,
  type ChatCommandName,
} from './chatops.js';
