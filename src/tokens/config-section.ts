import { bool, invalid, mapping, secret, section } from '../config-schema/index.js';

export interface ApiConfig {
  /** `GET /queue` without a token. @default false */
  publicQueue: boolean;
  /** `GET /metrics` without a token. @default false */
  publicMetrics: boolean;
  /** Stored as the `admin` token on first start instead of minting one (`BATON_BOOTSTRAP_TOKEN`). */
  bootstrapToken?: string;
}

/** An admin token anyone could guess in a day is no token: 32 characters of a random source are. */
const MIN_BOOTSTRAP_LENGTH = 32;

/** `api:` in baton.yaml: which endpoints answer without a token, and the first admin token. */
export const apiSection = section(
  mapping({
    publicQueue: bool({ default: false, doc: 'serve GET /queue without a token' }),
    publicMetrics: bool({ default: false, doc: 'serve GET /metrics without a token' }),
    bootstrapToken: secret({
      env: 'BATON_BOOTSTRAP_TOKEN',
      doc: 'on a first start with no API tokens, stored as the admin token (scope admin) instead of minting one; 32+ characters',
      // The message gives the length, never the value: it is a secret.
      check: (token) =>
        token.length < MIN_BOOTSTRAP_LENGTH || /\s/.test(token)
          ? invalid(
              `must be at least ${MIN_BOOTSTRAP_LENGTH} characters without spaces (e.g. from "openssl rand -hex 32"), got ${token.length} characters`,
            )
          : undefined,
    }),
  }),
  (v): ApiConfig => ({
    publicQueue: v.publicQueue,
    publicMetrics: v.publicMetrics,
    ...(v.bootstrapToken ? { bootstrapToken: v.bootstrapToken } : {}),
  }),
);
