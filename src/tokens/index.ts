export {
  createTokenStore,
  hashToken,
  TokenError,
  TOKEN_PREFIX,
  type ApiToken,
  type MintedToken,
  type TokenStore,
  type TokenStoreOptions,
} from './token-store.js';
export { apiSection } from './config-section.js';
