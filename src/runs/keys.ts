import type { TaskRequest } from './types.js';

/**
 * The dedup key of a run: `{stage}:{owner}/{repo}#{number}`, or `{stage}:{owner}/{repo}` for a
 * repository-wide stage. Stage names are `[a-z0-9-]` and forge names never hold `/`, `#`, `:` or
 * `@`, so two different (stage, repository, number) triples never share a key. The old
 * `{stage}-{owner}-{repo}-{number}` did: `acme/web-api#6` and `acme-web/api#6` both gave
 * `analyse-acme-web-api-6`, so one repository's event followed up the other's run (migration
 * 0055 rewrote those keys).
 */
export function runKey(request: Pick<TaskRequest, 'stage' | 'owner' | 'repo' | 'number' | 'key'>): string {
  if (request.key) return request.key;
  const base = `${request.stage}:${request.owner}/${request.repo}`;
  return request.number !== undefined ? `${base}#${request.number}` : base;
}

/** The key of one firing of a schedule: the task's key, `@` the slot (`maintenance:acme/app@2026-11-30T09:00:00.000Z`). */
export function slotKey(request: Pick<TaskRequest, 'stage' | 'owner' | 'repo' | 'number' | 'key'>, slot: string): string {
  return `${runKey(request)}@${slot}`;
}
