export type {
  CoderBuildStatus,
  CoderCreateWorkspaceRequest,
  CoderResponse,
  CoderTemplate,
  CoderTemplateParameter,
  CoderTransition,
  CoderWorkspace,
  CoderWorkspaceBuild,
} from './api-types.js';
export { createCoderClient, type Clock, type CoderClient, type CoderClientOptions } from './client.js';
export { CoderApiError, CoderPermanentError, CoderUnavailableError, CoderWaitTimeoutError } from './errors.js';
export {
  BATON_NAME_PREFIX,
  BATON_WORKSPACE_NAME_PATTERN,
  CODER_NAME_MAX_LENGTH,
  coderNameProblem,
  isBatonWorkspaceName,
  isValidCoderName,
  workspaceNameForKey,
} from './names.js';
export {
  CODER_TTL_MAX_MS,
  CODER_TTL_MIN_MS,
  createCoderProvider,
  toWorkspace,
  ttlForRun,
  WORKSPACE_PARAMETERS,
  type CoderProvider,
  type CoderProviderOptions,
  type ProviderHealth,
} from './provider.js';
export { createCoderProviderFromConfig } from './from-config.js';
export { IDENTITY_PARAMETER } from './identity.js';
export { coderSection, type CoderSettings } from './config-section.js';
