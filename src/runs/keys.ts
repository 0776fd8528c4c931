import type { TaskRequest } from './types.js';

/**
 * The forges baton serves. Gitea and Forgejo share one namespace (a Forgejo is a Gitea fork, the
 * same server may be called either); GitHub and GitLab each have their own, so their repositories,
 * run keys, label memory and catch-up places never meet Gitea's.
 */
export const FORGES = ['gitea', 'forgejo', 'github', 'gitlab'] as const;
export type ForgeName = (typeof FORGES)[number];

/** Whether runs, keys and stored repository names of this forge carry its name (`github:acme/app`). */
export function forgeIsNamed(forge: ForgeName | undefined): forge is 'github' | 'gitlab' {
  return forge === 'github' || forge === 'gitlab';
}

/**
 * `owner/repo`, or `forge:owner/repo` for GitHub and GitLab: how a repository is named wherever
 * several forges' repositories are kept side by side (the inbox, the label memory, catch-up).
 */
export function forgeRepository(forge: ForgeName | undefined, owner: string, repo: string): string {
  return forgeIsNamed(forge) ? `${forge}:${owner}/${repo}` : `${owner}/${repo}`;
}

/**
 * The dedup key of a run: `{stage}:{owner}/{repo}#{number}`, or `{stage}:{owner}/{repo}` for a
 * repository-wide stage. Stage names are `[a-z0-9-]` and forge names never hold `/`, `#`, `:` or
 * `@`, so two different (stage, repository, number) triples never share a key. The old
 * `{stage}-{owner}-{repo}-{number}` did: `acme/web-api#6` and `acme-web/api#6` both gave
 * `analyse-acme-web-api-6`, so one repository's event followed up the other's run (migration
 * 0055 rewrote those keys).
 *
 * GitHub's and GitLab's runs name their forge (`develop:github:acme/app#7`), so the same
 * repository name on two forges never shares a key; Gitea's keep the form they always had. A
 * GitLab merge request is `!7`: its numbers are apart from the issues' (`#7`).
 */
export function runKey(request: Pick<TaskRequest, 'stage' | 'owner' | 'repo' | 'number' | 'key' | 'forge' | 'mergeRequest'>): string {
  if (request.key) return request.key;
  const base = `${request.stage}:${forgeRepository(request.forge, request.owner, request.repo)}`;
  if (request.number === undefined) return base;
  return `${base}${request.forge === 'gitlab' && request.mergeRequest ? '!' : '#'}${request.number}`;
}

/** The key of one firing of a schedule: the task's key, `@` the slot (`maintenance:acme/app@2026-11-30T09:00:00.000Z`). */
export function slotKey(
  request: Pick<TaskRequest, 'stage' | 'owner' | 'repo' | 'number' | 'key' | 'forge' | 'mergeRequest'>,
  slot: string,
): string {
  return `${runKey(request)}@${slot}`;
}

/** An issue or pull request of one forge, as a run names it. */
export interface ForgeItem {
  number: number;
  /** @default 'gitea' (Gitea and Forgejo are one namespace) */
  forge?: ForgeName;
  /** GitLab: the merge request of that number (`!7`), not the issue (`#7`). */
  mergeRequest?: boolean;
}

/**
 * Whether a run is of this item: the same number on the same forge (the same repository name on
 * GitHub and on Gitea is two repositories), and on GitLab the merge request or the issue as the
 * run's key names it. The repository itself is the caller's filter.
 */
export function runIsOf(run: { key: string; number: number | null; forge?: ForgeName }, item: ForgeItem): boolean {
  if (run.number !== item.number) return false;
  const named = (forge: ForgeName | undefined) => (forgeIsNamed(forge) ? forge : 'gitea');
  if (named(run.forge) !== named(item.forge)) return false;
  if (item.forge !== 'gitlab') return true;
  return run.key.split('@')[0]!.endsWith(`${item.mergeRequest ? '!' : '#'}${item.number}`);
}
