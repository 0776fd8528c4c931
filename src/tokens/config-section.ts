import { bool, invalid, mapping, secret, section } from '../config-schema/index.js';
import type { ApiConfig } from '../config/index.js';

/** `api:` in baton.yaml: which endpoints answer without a token, and the first admin token. */
export const apiSection = section(
  mapping({
    publicQueue: bool({ default: false, doc: 'serve GET /queue without a token' }),
    publicMetrics: bool({ default: false, doc: 'serve GET /metrics without a token' }),
    bootstrapToken: secret({
      env: 'BATON_BOOTSTRAP_TOKEN',
      doc: 'on a first start with no API tokens, stored as the admin token instead of minting and printing one',
      // The message gives the length, never the value: it is a secret.
      check: (token) =>
        token.length < 24 || /\s/.test(token)
          ? invalid(`must be at least 24 characters without spaces (e.g. from "openssl rand -hex 32"), got ${token.length} characters`)
          : undefined,
    }),
  }),
  (v): ApiConfig => ({
    publicQueue: v.publicQueue,
    publicMetrics: v.publicMetrics,
    ...(v.bootstrapToken ? { bootstrapToken: v.bootstrapToken } : {}),
  }),
);
