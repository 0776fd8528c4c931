import type { Migration } from './types.js';

/**
 * What an API token may do: `read` (GET only), `operate` (read, plus the operator actions: retry,
 * cancel, pause, resume, replay, run submission) or `admin` (everything). Every token minted
 * before scopes existed could do everything, so existing rows become `admin`.
 */
export const tokenScopes: Migration = {
  name: '0041-token-scopes',
  sqlite: [`ALTER TABLE api_tokens ADD COLUMN scope TEXT NOT NULL DEFAULT 'admin'`],
  postgres: [`ALTER TABLE api_tokens ADD COLUMN scope TEXT NOT NULL DEFAULT 'admin'`],
};
