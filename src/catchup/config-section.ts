import { bool, invalid, list, mapping, number, section, text } from '../config-schema/index.js';
import { parseRepositoryName, REPOSITORY_NAME_RULE } from '../repositories/index.js';

/** Defaults of the `catchup:` section. */
export const CATCHUP_DEFAULTS = { enabled: true, intervalMinutes: 10 } as const;

export interface CatchupConfig {
  /** Catch-up runs at start and every `intervalMs`. @default true */
  enabled: boolean;
  /** @default 10 minutes */
  intervalMs: number;
  /**
   * Repositories read even before any of their webhooks arrived; those seen in deliveries are
   * read too.
   * @example [{ owner: 'acme', repo: 'app' }]
   */
  repositories: { owner: string; repo: string }[];
}

/**
 * `catchup:` in baton.yaml: reading the forge's API for what webhooks missed while baton was down
 * or unreachable.
 *
 * ```yaml
 * catchup:
 *   enabled: true
 *   intervalMinutes: 10
 *   repositories: [acme/app, acme/api]
 * ```
 */
export const catchupSection = section(
  mapping({
    enabled: bool({
      env: 'CATCHUP_ENABLED',
      default: CATCHUP_DEFAULTS.enabled,
      doc: 'read the forge API at start and periodically for events webhooks missed',
    }),
    intervalMinutes: number({
      env: 'CATCHUP_INTERVAL_MINUTES',
      min: 1,
      default: CATCHUP_DEFAULTS.intervalMinutes,
      doc: 'minutes between catch-up passes',
    }),
    repositories: list(
      text({ doc: 'an owner/repo name', check: (name) => (parseRepositoryName(name) ? undefined : invalid(REPOSITORY_NAME_RULE)) }),
      { env: 'CATCHUP_REPOSITORIES', doc: 'owner/repo names read even before a webhook of theirs arrived' },
    ),
  }),
  (v): CatchupConfig => ({
    enabled: v.enabled,
    intervalMs: Math.round(v.intervalMinutes * 60_000),
    repositories: (v.repositories ?? []).flatMap((name) => {
      const parsed = parseRepositoryName(name);
      return parsed ? [parsed] : [];
    }),
  }),
);
