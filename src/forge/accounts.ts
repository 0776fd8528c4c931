import type { ResolvedOf } from '../config-schema/index.js';
import type { botsSection, giteaSection } from './config-section.js';
import { createGiteaClient } from './gitea/index.js';
import type { ForgeClient } from './types.js';

/** One client per bot account name (`dev`, `review`). Only accounts that have a token appear. */
export type ForgeAccounts = Readonly<Partial<Record<string, ForgeClient>>>;

export interface ForgeAccountsOptions {
  /** @default globalThis.fetch */
  fetch?: typeof globalThis.fetch;
  /** @default 15_000 */
  timeoutMs?: number;
}

/**
 * The dev bot acts with `GITEA_DEV_TOKEN`, the review bot with `GITEA_REVIEW_TOKEN`
 * (`config.bots`). Without `GITEA_URL` there is no forge and the result is empty.
 */
export function createForgeAccounts(
  config: { gitea: ResolvedOf<typeof giteaSection>; bots: ResolvedOf<typeof botsSection> },
  options: ForgeAccountsOptions = {},
): ForgeAccounts {
  const baseUrl = config.gitea.url;
  if (!baseUrl) return Object.freeze({});
  const accounts: Record<string, ForgeClient> = {};
  for (const [name, bot] of Object.entries(config.bots)) {
    if (bot.token) accounts[name] = createGiteaClient({ baseUrl, token: bot.token, fetch: options.fetch, timeoutMs: options.timeoutMs });
  }
  return Object.freeze(accounts);
}
