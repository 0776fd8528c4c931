export {
  createTokenStore,
  hashToken,
  isTokenScope,
  scopeAllows,
  TokenError,
  TOKEN_PREFIX,
  TOKEN_SCOPES,
  type ApiToken,
  type MintedToken,
  type TokenScope,
  type TokenStore,
  type TokenStoreOptions,
} from './token-store.js';
export {
  createSessionStore,
  type DashboardSession,
  type SessionLifetime,
  type SessionStore,
  type SessionStoreOptions,
} from './session-store.js';
export { apiSection, type ApiConfig } from './config-section.js';
