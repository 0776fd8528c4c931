export { capabilityFor } from './capability.js';
export { forgeGatewayRoutes, GATEWAY_PREFIX, type ForgeGatewayDeps, type GatewayForge, type GatewayToken } from './routes.js';
export { readRefUpdates, type RefUpdate } from './pkt-line.js';
export { branchAllowed, DEFAULT_RIGHTS, type RunRights } from './rights.js';
export { giteaDialect } from './gitea.js';
export { githubDialect } from './github.js';
export { gitlabDialect } from './gitlab.js';
export type { ApiChange, ForgeDialect, Target } from './dialect.js';
