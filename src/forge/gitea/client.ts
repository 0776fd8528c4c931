import { ForgeError } from '../errors.js';
import type { ForgeClient } from '../types.js';
import {
  normalizeLabelColor,
  toComment,
  toHook,
  toIssue,
  toLabel,
  toPermission,
  toPullRequest,
  toRepoComment,
  toRepository,
  toReview,
  toTimelineEvent,
  toUser,
} from './map.js';
import type {
  GiteaComment,
  GiteaHook,
  GiteaIssue,
  GiteaLabel,
  GiteaPullRequest,
  GiteaPullReview,
  GiteaRepoCollaboratorPermission,
  GiteaRepository,
  GiteaTimelineComment,
  GiteaUser,
} from './wire.js';

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

/** Gitea's maximum page size (`[api] MAX_RESPONSE_ITEMS`, default 50). */
const PAGE_SIZE = 50;
/** Stops a list that never ends (a proxy ignoring `page`) from looping forever. */
const MAX_PAGES = 100;

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
    return (await exchange<T>(method, path, body)).data;
  }

  async function exchange<T>(method: string, path: string, body?: unknown): Promise<{ data: T | undefined; headers: Headers }> {
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
    if (response.status === 204 || text.trim() === '') return { data: undefined, headers: response.headers };
    try {
      return { data: JSON.parse(text) as T, headers: response.headers };
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

  /**
   * Follows `?page=` until `X-Total-Count` items arrived, or an empty page. A short page is not
   * the end: the server may cap `limit` below what was asked (`MAX_RESPONSE_ITEMS`).
   */
  async function listAll<T>(path: string): Promise<T[]> {
    const all: T[] = [];
    for (let page = 1; page <= MAX_PAGES; page++) {
      const pagePath = `${path}${path.includes('?') ? '&' : '?'}page=${page}&limit=${PAGE_SIZE}`;
      const { data, headers } = await exchange<T[]>('GET', pagePath);
      if (!Array.isArray(data)) throw new ForgeError(`Gitea GET ${pagePath} did not answer with a list`, { kind: 'protocol' });
      all.push(...data);
      const total = Number(headers.get('x-total-count') ?? NaN);
      if (data.length === 0 || (Number.isFinite(total) && all.length >= total)) break;
    }
    return all;
  }

  /** One page of a list, checked to be a list. */
  async function page<T>(path: string, number: number): Promise<{ items: T[]; total: number }> {
    const pagePath = `${path}${path.includes('?') ? '&' : '?'}page=${number}&limit=${PAGE_SIZE}`;
    const { data, headers } = await exchange<T[]>('GET', pagePath);
    if (!Array.isArray(data)) throw new ForgeError(`Gitea GET ${pagePath} did not answer with a list`, { kind: 'protocol' });
    return { items: data, total: Number(headers.get('x-total-count') ?? NaN) };
  }

  return {
    async listIssuesUpdatedSince(owner, repo, since) {
      // routers/api/v1/repo/issue.go ListIssues (reference/gitea/API.md, "Endpoints for catch-up"):
      // `since` is inclusive on updated_at; `state` defaults to open, so `all` is sent; the order is
      // newest *created* first whatever `since` says, so every page is read, never stopping early.
      // An issue created while paging shifts the rest down a place: one may come twice, none is
      // skipped; the duplicates are dropped here.
      const query = `state=all&type=issues&since=${encodeURIComponent(since)}`;
      const issues = await listAll<GiteaIssue>(`${repoPath(owner, repo)}/issues?${query}`);
      return unique(issues.map(toIssue));
    },
    async listPullRequestsUpdatedSince(owner, repo, since) {
      // routers/api/v1/repo/pull.go ListPullRequests: no `since` parameter, but
      // `sort=recentupdate` orders by updated_at descending, so the walk stops at the first pull
      // request older than `since`. `state` is sent: omitted means all on every version, though
      // the 1.23+ swagger says open.
      const sinceMs = Date.parse(since);
      const pulls: GiteaPullRequest[] = [];
      for (let number = 1; number <= MAX_PAGES; number++) {
        const { items, total } = await page<GiteaPullRequest>(`${repoPath(owner, repo)}/pulls?state=all&sort=recentupdate`, number);
        const recent = items.filter((pr) => !(Date.parse(pr.updated_at) < sinceMs));
        pulls.push(...recent);
        const done = items.length === 0 || recent.length < items.length;
        if (done || (Number.isFinite(total) && number * PAGE_SIZE >= total)) break;
      }
      return unique(pulls.map(toPullRequest));
    },
    async listCommentsUpdatedSince(owner, repo, since) {
      // routers/api/v1/repo/issue_comment.go ListRepoIssueComments (test/fakes/gitea/SOURCES.md):
      // plain comments only (CommentTypeComment: no label, push or review entries, no code
      // comments), `since` inclusive on the comment's updated_unix (whole seconds), oldest created
      // first, X-Total-Count the filtered total. Without `page` Gitea sends everything at once;
      // listAll always pages. A comment created while paging shifts nothing already read (the
      // order is by creation, ascending), so the walk misses none.
      const path = `${repoPath(owner, repo)}/issues/comments?since=${encodeURIComponent(since)}`;
      const comments = await listAll<GiteaComment>(path);
      return unique(comments.flatMap((c) => toRepoComment(c) ?? []));
    },
    async listTimeline(owner, repo, number, since) {
      // routers/api/v1/repo/issue_comment.go ListIssueCommentsAndTimeline: `since` filters on the
      // entry's updated_at; X-Total-Count there is the length of the page just sent, not the
      // total, so it cannot end the walk: pages are read until an empty one.
      const query = since === undefined ? '' : `?since=${encodeURIComponent(since)}`;
      const path = `${repoPath(owner, repo)}/issues/${number}/timeline${query}`;
      const entries: GiteaTimelineComment[] = [];
      for (let n = 1; n <= MAX_PAGES; n++) {
        const { items } = await page<GiteaTimelineComment>(path, n);
        if (items.length === 0) break;
        entries.push(...items);
      }
      // Null entries happen: ToTimelineComment returns nil when it cannot load a part.
      return unique(entries.filter((e) => e !== null && typeof e === 'object').map(toTimelineEvent)).sort((a, b) => a.id - b.id);
    },
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
    async addCommentReaction(owner, repo, commentId, content) {
      // POST …/issues/comments/{id}/reactions (swagger issuePostCommentReaction): 201 new, 200 already given.
      await request('POST', `${repoPath(owner, repo)}/issues/comments/${commentId}/reactions`, { content });
    },
    async listRepoLabels(owner, repo) {
      return (await listAll<GiteaLabel>(`${repoPath(owner, repo)}/labels`)).map(toLabel);
    },
    async addIssueLabels(owner, repo, number, labels) {
      const path = `${repoPath(owner, repo)}/issues/${number}/labels`;
      return (await required<GiteaLabel[]>('POST', path, { labels: [...labels] })).map(toLabel);
    },
    async removeIssueLabel(owner, repo, number, labelId) {
      await request('DELETE', `${repoPath(owner, repo)}/issues/${number}/labels/${labelId}`);
    },
    async listPullReviews(owner, repo, number) {
      return (await listAll<GiteaPullReview>(`${repoPath(owner, repo)}/pulls/${number}/reviews`)).map(toReview);
    },
    async getUserPermission(owner, repo, username) {
      const answer = await required<GiteaRepoCollaboratorPermission>(
        'GET',
        `${repoPath(owner, repo)}/collaborators/${seg(username)}/permission`,
      );
      return toPermission(answer.permission);
    },
    async getRepository(owner, repo) {
      return toRepository(await required<GiteaRepository>('GET', repoPath(owner, repo)));
    },
    async listHooks(owner, repo) {
      return (await listAll<GiteaHook>(`${repoPath(owner, repo)}/hooks`)).map(toHook);
    },
    async createHook(owner, repo, hook) {
      // `active` defaults to false (an inactive hook gets nothing) and `type` and both config keys
      // are required: every field is sent (reference/gitea/API.md, webhooks).
      const body = {
        type: 'gitea',
        config: { url: hook.url, content_type: 'json', secret: hook.secret },
        events: [...hook.events],
        active: true,
        branch_filter: '',
      };
      return toHook(await required<GiteaHook>('POST', `${repoPath(owner, repo)}/hooks`, body));
    },
    async editHook(owner, repo, id, hook) {
      // An edit resets what it omits (events to push only, the branch filter to empty), so
      // everything is sent; a secret would be ignored, so none is.
      const body = { config: { url: hook.url, content_type: 'json' }, events: [...hook.events], active: true, branch_filter: '' };
      return toHook(await required<GiteaHook>('PATCH', `${repoPath(owner, repo)}/hooks/${id}`, body));
    },
    async deleteHook(owner, repo, id) {
      await request('DELETE', `${repoPath(owner, repo)}/hooks/${id}`);
    },
    async createLabel(owner, repo, label) {
      const body = { name: label.name, color: normalizeLabelColor(label.color), description: label.description ?? '' };
      return toLabel(await required<GiteaLabel>('POST', `${repoPath(owner, repo)}/labels`, body));
    },
    async issueWriteAccess(owner, repo) {
      // Gitea checks the token's scope (write:issue) and the repository before it reads the
      // body: an empty comment on issue 0, which cannot exist, is refused with 422 or 404 when
      // writing is allowed and with 403 naming the missing scope when not. Nothing is written.
      try {
        await request('POST', `${repoPath(owner, repo)}/issues/0/comments`, {});
        return { allowed: true };
      } catch (err) {
        if (err instanceof ForgeError && (err.status === 404 || err.status === 422)) return { allowed: true };
        if (err instanceof ForgeError && (err.status === 401 || err.status === 403))
          return { allowed: false, reason: err.forgeMessage ?? `Gitea answered ${err.status}` };
        throw err;
      }
    },
  };
}

/** The first copy of each item (by `id`), in order. */
function unique<T extends { id: number }>(items: T[]): T[] {
  const seen = new Set<number>();
  return items.filter((item) => !seen.has(item.id) && seen.add(item.id));
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
