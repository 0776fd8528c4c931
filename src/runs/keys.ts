import type { TaskRequest } from './types.js';

/** `{stage}-{owner}-{repo}-{number}`; repository-wide stages leave the number out. */
export function runKey(request: Pick<TaskRequest, 'stage' | 'owner' | 'repo' | 'number' | 'key'>): string {
  if (request.key) return request.key;
  const parts = [request.stage, request.owner, request.repo];
  if (request.number !== undefined) parts.push(String(request.number));
  return parts.join('-');
}
