export { capabilityFor } from './capability.js';
export { forgeGatewayRoutes, GATEWAY_PREFIX, type ForgeGatewayDeps } from './routes.js';
export { readRefUpdates, type RefUpdate } from './pkt-line.js';
export { branchAllowed, DEFAULT_RIGHTS, type RunRights } from './rights.js';
