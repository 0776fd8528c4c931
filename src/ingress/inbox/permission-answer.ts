/** Where a refused sender, and the operator reading the verdict, learn what to change. */
export const PERMISSION_HELP_PAGE = 'docs/troubleshooting.md#permission-failures';
export const PERMISSION_HELP = `see ${PERMISSION_HELP_PAGE}`;

/**
 * How a failed permission lookup is read, as Gitea answers
 * `GET /repos/{owner}/{repo}/collaborators/{user}/permission` (reference/gitea/API.md):
 * - 403: the bot token may not ask (only site admins, repository admins and the user themself
 *   may). No retry changes that: a configuration problem for the operator;
 * - 401: the token itself is refused: a configuration problem too;
 * - 404: the sender is unknown (a deleted account, `gitea-actions`): not permitted;
 * - network failure, timeout, 408, 429, 5xx: transient, retried (`Retry-After` honoured).
 * Anything else the forge answers is permanent and unexpected: reported like a configuration
 * problem, so it is seen, rather than retried for ever.
 *
 * The lookup is the forge client's; its errors carry `status`, `retryable` and `retryAfterMs`
 * (ForgeError in src/forge/errors.ts). Anything without them (a bug) is retried: never dropped.
 */
export type PermissionFailure =
  { kind: 'misconfigured'; message: string } | { kind: 'unknown-sender' } | { kind: 'transient'; message: string; retryAfterMs?: number };

export function readPermissionFailure(err: unknown): PermissionFailure {
  const details = (typeof err === 'object' && err !== null ? err : {}) as {
    status?: unknown;
    retryable?: unknown;
    retryAfterMs?: unknown;
    message?: unknown;
  };
  const message = typeof details.message === 'string' ? details.message : String(err);
  const status = typeof details.status === 'number' ? details.status : undefined;
  const retryAfterMs = typeof details.retryAfterMs === 'number' ? details.retryAfterMs : undefined;
  if (status === 404) return { kind: 'unknown-sender' };
  if (status === 401 || status === 403) return { kind: 'misconfigured', message };
  if (details.retryable === false && status !== undefined) return { kind: 'misconfigured', message };
  return { kind: 'transient', message, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) };
}
