import { ForgeError } from '../errors.js';
import type { ForgeClient } from '../types.js';
import { toComment, toIssue, toLabel, toPermission, toPullRequest, toUser } from './map.js';
import type { GiteaComment, GiteaIssue, GiteaLabel, GiteaPullRequest, GiteaRepoCollaboratorPermission, GiteaUser } from './wire.js';

export interface GiteaClientOptions {
  /**
   * The Gitea root URL, without `/api/v1`.
   * @example 'https://gitea.example.com'
   */
  baseUrl: string;
  /** Personal access token of the account this client acts as. */
  token: string;
  /** @default globalThis.fetch */
  fetch?: typeof globalThis.fetch;
  /**
   * Per-request limit; a request that takes longer fails with a retryable `ForgeError`.
   * @default 15_000
   */
  timeoutMs?: number;
}

/** Gitea's error messages are short; anything longer is an HTML error page from a proxy. */
const MAX_MESSAGE_LENGTH = 300;

/**
 * A `ForgeClient` for Gitea (and Forgejo) API v1. Authenticates with `Authorization: token …`,
 * the one header form every Gitea version accepts (the scheme word must be lowercase).
 */
export function createGiteaClient(options: GiteaClientOptions): ForgeClient {
  const apiBase = `${options.baseUrl.replace(/\/+$/, '')}/api/v1`;
  const fetchImpl = options.fetch ?? globalThis.fetch;
  const timeoutMs = options.timeoutMs ?? 15_000;
  const seg = encodeURIComponent;

  async function request<T>(method: string, path: string, body?: unknown): Promise<T | undefined> {
    const what = `Gitea ${method} ${path}`;
    let response: Response;
    try {
      response = await fetchImpl(`${apiBase}${path}`, {
        method,
        headers: {
          authorization: `token ${options.token}`,
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (err) {
      const timedOut = err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError');
      throw new ForgeError(
        timedOut ? `${what} timed out after ${timeoutMs} ms` : `${what} failed: ${scrub(describeCause(err), options.token)}`,
        { kind: timedOut ? 'timeout' : 'network', cause: err },
      );
    }
    let text: string;
    try {
      text = await response.text();
    } catch (err) {
      throw new ForgeError(`${what} failed while reading the response: ${scrub(describeCause(err), options.token)}`, {
        kind: 'network',
        status: response.status,
        cause: err,
      });
    }
    if (!response.ok) {
      const forgeMessage = scrub(messageOf(text), options.token);
      throw new ForgeError(`${what} failed: ${response.status}${forgeMessage ? ` ${forgeMessage}` : ''}`, {
        kind: 'http',
        status: response.status,
        forgeMessage,
        retryAfterMs: retryAfter(response.headers.get('retry-after')),
      });
    }
    if (response.status === 204 || text.trim() === '') return undefined;
    try {
      return JSON.parse(text) as T;
    } catch (err) {
      throw new ForgeError(`${what} answered ${response.status} with a body that is not JSON`, {
        kind: 'protocol',
        status: response.status,
        cause: err,
      });
    }
  }

  async function required<T>(method: string, path: string, body?: unknown): Promise<T> {
    const value = await request<T>(method, path, body);
    if (value === undefined) {
      throw new ForgeError(`Gitea ${method} ${path} answered without a body`, { kind: 'protocol' });
    }
    return value;
  }

  const repoPath = (owner: string, repo: string) => `/repos/${seg(owner)}/${seg(repo)}`;

  return {
    async getCurrentUser() {
      return toUser(await required<GiteaUser>('GET', '/user'));
    },
    async getIssue(owner, repo, number) {
      return toIssue(await required<GiteaIssue>('GET', `${repoPath(owner, repo)}/issues/${number}`));
    },
    async getPullRequest(owner, repo, number) {
      return toPullRequest(await required<GiteaPullRequest>('GET', `${repoPath(owner, repo)}/pulls/${number}`));
    },
    async listIssueLabels(owner, repo, number) {
      return (await required<GiteaLabel[]>('GET', `${repoPath(owner, repo)}/issues/${number}/labels`)).map(toLabel);
    },
    async listComments(owner, repo, number) {
      return (await required<GiteaComment[]>('GET', `${repoPath(owner, repo)}/issues/${number}/comments`)).map(toComment);
    },
    async createComment(owner, repo, number, body) {
      return toComment(await required<GiteaComment>('POST', `${repoPath(owner, repo)}/issues/${number}/comments`, { body }));
    },
    async editComment(owner, repo, commentId, body) {
      const path = `${repoPath(owner, repo)}/issues/comments/${commentId}`;
      // The swagger allows 204 for an edit; then the comment is read back.
      const edited = await request<GiteaComment>('PATCH', path, { body });
      return toComment(edited ?? (await required<GiteaComment>('GET', path)));
    },
    async getUserPermission(owner, repo, username) {
      const answer = await required<GiteaRepoCollaboratorPermission>(
        'GET',
        `${repoPath(owner, repo)}/collaborators/${seg(username)}/permission`,
      );
      return toPermission(answer.permission);
    },
  };
}

function messageOf(text: string): string | undefined {
  let message: unknown;
  try {
    message = (JSON.parse(text) as { message?: unknown }).message;
  } catch {
    message = undefined;
  }
  if (typeof message !== 'string' || message === '') return undefined;
  return message.length > MAX_MESSAGE_LENGTH ? `${message.slice(0, MAX_MESSAGE_LENGTH)}…` : message;
}

function describeCause(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause as { code?: unknown; message?: unknown } | undefined;
  const code = typeof cause?.code === 'string' ? cause.code : undefined;
  return code ? `${err.message} (${code})` : err.message;
}

/** A forge that echoes the credentials back must not get them into logs through our errors. */
function scrub<T extends string | undefined>(text: T, token: string): T {
  if (text === undefined || token === '') return text;
  return text.split(token).join('********') as T;
}

function retryAfter(header: string | null): number | undefined {
  if (!header) return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}
