import { ForgeError } from '../errors.js';
import { normalizeLabelColor } from '../gitea/index.js';
import { createForgeTransport, nextLink, uniqueById } from '../transport.js';
import type { ForgeClient } from '../types.js';
import {
  toComment,
  toHook,
  toIssue,
  toLabel,
  toPermission,
  toPullRequest,
  toRepository,
  toReview,
  toTimelineEvent,
  toUser,
} from './map.js';
import type {
  GitHubComment,
  GitHubHook,
  GitHubIssue,
  GitHubLabel,
  GitHubPermission,
  GitHubPullRequest,
  GitHubRepository,
  GitHubReview,
  GitHubTimelineEvent,
  GitHubUser,
} from './wire.js';

export interface GitHubClientOptions {
  /**
   * The REST API root: `https://api.github.com`, or `<root>/api/v3` on GitHub Enterprise Server
   * (`githubApiUrl` makes it from GITHUB_URL).
   */
  apiUrl: string;
  /** A personal access token (classic or fine-grained) or an installation token. */
  token: string;
  /** @default globalThis.fetch */
  fetch?: typeof globalThis.fetch;
  /** @default 15_000 */
  timeoutMs?: number;
}

/** GitHub's largest page (`per_page`). */
const PAGE_SIZE = 100;
/** Stops a list that never ends (a proxy repeating `Link`) from looping forever. */
const MAX_PAGES = 100;

/** `https://github.com` → `https://api.github.com`; any other root (Enterprise Server) → `<root>/api/v3`. */
export function githubApiUrl(rootUrl: string): string {
  const root = rootUrl.replace(/\/+$/, '');
  const host = new URL(root).host.toLowerCase();
  return host === 'github.com' || host === 'www.github.com' ? 'https://api.github.com' : `${root}/api/v3`;
}

/**
 * A `ForgeClient` for GitHub and GitHub Enterprise Server (REST, version 2022-11-28). Pull requests
 * are issues there too, so comments and labels of a pull request go through its issue number, as
 * on Gitea. Where GitHub differs from the port, the difference is bridged here: labels are added
 * and removed by name (ids are looked up), a name the repository does not define is dropped
 * rather than created (GitHub would create it), and lists follow `Link: rel="next"`.
 */
export function createGitHubClient(options: GitHubClientOptions): ForgeClient {
  const apiBase = options.apiUrl.replace(/\/+$/, '');
  const http = createForgeTransport({
    forge: 'GitHub',
    apiBase,
    token: options.token,
    fetch: options.fetch,
    timeoutMs: options.timeoutMs,
    headers: {
      authorization: `Bearer ${options.token}`,
      accept: 'application/vnd.github+json',
      'x-github-api-version': '2022-11-28',
      // GitHub refuses requests without a User-Agent.
      'user-agent': 'baton',
    },
    // A spent primary rate limit is a 403 with x-ratelimit-remaining: 0; it passes at x-ratelimit-reset.
    rateLimited: (r) => r.status === 403 && r.headers.get('x-ratelimit-remaining') === '0',
  });
  const seg = encodeURIComponent;
  const repoPath = (owner: string, repo: string) => `/repos/${seg(owner)}/${seg(repo)}`;

  async function listAll<T>(path: string, keep?: (items: T[]) => { items: T[]; done: boolean }): Promise<T[]> {
    const all: T[] = [];
    let url: string | undefined = `${path}${path.includes('?') ? '&' : '?'}per_page=${PAGE_SIZE}`;
    for (let page = 1; url !== undefined && page <= MAX_PAGES; page++) {
      const { items, headers } = await http.list<T>('GET', url);
      const kept = keep ? keep(items) : { items, done: false };
      all.push(...kept.items);
      if (kept.done || items.length === 0) break;
      url = nextLink(headers.get('link'));
    }
    return all;
  }

  async function labelsByName(owner: string, repo: string): Promise<Map<string, GitHubLabel>> {
    const labels = await listAll<GitHubLabel>(`${repoPath(owner, repo)}/labels`);
    return new Map(labels.map((l) => [l.name.toLowerCase(), l]));
  }

  const client: ForgeClient = {
    async getCurrentUser() {
      return toUser(await http.required<GitHubUser>('GET', '/user'));
    },
    async getIssue(owner, repo, number) {
      return toIssue(await http.required<GitHubIssue>('GET', `${repoPath(owner, repo)}/issues/${number}`));
    },
    async getPullRequest(owner, repo, number) {
      return toPullRequest(await http.required<GitHubPullRequest>('GET', `${repoPath(owner, repo)}/pulls/${number}`));
    },
    async listIssueLabels(owner, repo, number) {
      return (await listAll<GitHubLabel>(`${repoPath(owner, repo)}/issues/${number}/labels`)).map(toLabel);
    },
    async listComments(owner, repo, number) {
      return (await listAll<GitHubComment>(`${repoPath(owner, repo)}/issues/${number}/comments`)).map(toComment);
    },
    async createComment(owner, repo, number, body) {
      return toComment(await http.required<GitHubComment>('POST', `${repoPath(owner, repo)}/issues/${number}/comments`, { body }));
    },
    async editComment(owner, repo, commentId, body) {
      return toComment(await http.required<GitHubComment>('PATCH', `${repoPath(owner, repo)}/issues/comments/${commentId}`, { body }));
    },
    async addCommentReaction(owner, repo, commentId, content) {
      // POST …/issues/comments/{id}/reactions: 201 new, 200 when this account already reacted so.
      await http.exchange('POST', `${repoPath(owner, repo)}/issues/comments/${commentId}/reactions`, { content });
    },
    async listRepoLabels(owner, repo) {
      return (await listAll<GitHubLabel>(`${repoPath(owner, repo)}/labels`)).map(toLabel);
    },
    async addIssueLabels(owner, repo, number, labels) {
      // GitHub adds by name and creates a name it does not know; the port ignores unknown names
      // (as Gitea does), so names and ids are both resolved against the repository's labels.
      const known = await labelsByName(owner, repo);
      const byId = new Map([...known.values()].map((l) => [l.id, l]));
      const names = labels.flatMap((l) => {
        const found = typeof l === 'number' ? byId.get(l) : known.get(l.toLowerCase());
        return found ? [found.name] : [];
      });
      const path = `${repoPath(owner, repo)}/issues/${number}/labels`;
      if (names.length === 0) return client.listIssueLabels(owner, repo, number);
      return (await http.required<GitHubLabel[]>('POST', path, { labels: names })).map(toLabel);
    },
    async removeIssueLabel(owner, repo, number, labelId) {
      const label = [...(await labelsByName(owner, repo)).values()].find((l) => l.id === labelId);
      if (!label) throw new ForgeError(`GitHub has no label ${labelId} in ${owner}/${repo}`, { kind: 'http', status: 404 });
      try {
        await http.exchange('DELETE', `${repoPath(owner, repo)}/issues/${number}/labels/${seg(label.name)}`);
      } catch (err) {
        // 404 "Label does not exist": it was not on the issue, which is what removing asks for.
        if (!(err instanceof ForgeError && err.status === 404)) throw err;
      }
    },
    async listPullReviews(owner, repo, number) {
      return (await listAll<GitHubReview>(`${repoPath(owner, repo)}/pulls/${number}/reviews`)).map(toReview);
    },
    async listIssuesUpdatedSince(owner, repo, since) {
      // GET /repos/{o}/{r}/issues lists pull requests too (they carry `pull_request`): dropped.
      const query = `state=all&sort=updated&direction=desc&since=${encodeURIComponent(since)}`;
      const issues = await listAll<GitHubIssue>(`${repoPath(owner, repo)}/issues?${query}`);
      return uniqueById(issues.filter((i) => !i.pull_request).map(toIssue));
    },
    async listPullRequestsUpdatedSince(owner, repo, since) {
      // No `since` on pulls: ordered by updated_at descending, the walk stops at the first older one.
      const sinceMs = Date.parse(since);
      const pulls = await listAll<GitHubPullRequest>(`${repoPath(owner, repo)}/pulls?state=all&sort=updated&direction=desc`, (items) => {
        const recent = items.filter((pr) => !(Date.parse(pr.updated_at) < sinceMs));
        return { items: recent, done: recent.length < items.length };
      });
      return uniqueById(pulls.map(toPullRequest));
    },
    async listCommentsUpdatedSince(owner, repo, since) {
      // GET /repos/{o}/{r}/issues/comments: every issue's and pull request's comments, `since`
      // on updated_at; sorted by creation, oldest first. The issue is the tail of `issue_url`.
      const query = `sort=created&direction=asc&since=${encodeURIComponent(since)}`;
      const comments = await listAll<GitHubComment>(`${repoPath(owner, repo)}/issues/comments?${query}`);
      return uniqueById(
        comments.flatMap((c) => {
          const number = Number(/\/issues\/(\d+)$/.exec(c.issue_url ?? '')?.[1]);
          return Number.isSafeInteger(number) && number > 0 ? [{ ...toComment(c), number }] : [];
        }),
      );
    },
    async listTimeline(owner, repo, number, since) {
      const entries = await listAll<GitHubTimelineEvent>(`${repoPath(owner, repo)}/issues/${number}/timeline`);
      const sinceMs = since === undefined ? -Infinity : Date.parse(since);
      return uniqueById(
        entries.flatMap((e) => {
          const mapped = e !== null && typeof e === 'object' ? toTimelineEvent(e) : undefined;
          return mapped && !(Date.parse(mapped.createdAt) < sinceMs) ? [mapped] : [];
        }),
      ).sort((a, b) => a.id - b.id);
    },
    async getUserPermission(owner, repo, username) {
      const answer = await http.required<GitHubPermission>('GET', `${repoPath(owner, repo)}/collaborators/${seg(username)}/permission`);
      return toPermission(answer.permission);
    },
    async getRepository(owner, repo) {
      return toRepository(await http.required<GitHubRepository>('GET', repoPath(owner, repo)));
    },
    async listHooks(owner, repo) {
      return (await listAll<GitHubHook>(`${repoPath(owner, repo)}/hooks`)).map(toHook);
    },
    async createHook(owner, repo, hook) {
      const body = {
        name: 'web',
        active: true,
        events: [...hook.events],
        config: { url: hook.url, content_type: 'json', secret: hook.secret, insecure_ssl: '0' },
      };
      return toHook(await http.required<GitHubHook>('POST', `${repoPath(owner, repo)}/hooks`, body));
    },
    async editHook(owner, repo, id, hook) {
      // The hook's own PATCH replaces `config` whole (a secret left out is removed), so the
      // config goes through /config, which changes only the fields it is given.
      await http.required<unknown>('PATCH', `${repoPath(owner, repo)}/hooks/${id}/config`, { url: hook.url, content_type: 'json' });
      const body = { active: true, events: [...hook.events] };
      return toHook(await http.required<GitHubHook>('PATCH', `${repoPath(owner, repo)}/hooks/${id}`, body));
    },
    async deleteHook(owner, repo, id) {
      await http.exchange('DELETE', `${repoPath(owner, repo)}/hooks/${id}`);
    },
    async createLabel(owner, repo, label) {
      const body = { name: label.name, color: normalizeLabelColor(label.color).replace(/^#/, ''), description: label.description ?? '' };
      return toLabel(await http.required<GitHubLabel>('POST', `${repoPath(owner, repo)}/labels`, body));
    },
    async issueWriteAccess(owner, repo) {
      // Labels need triage or more; the repository's `permissions` say what this account may do.
      // (A fine-grained token may still lack the Issues permission: the first write tells.)
      const repository = await http.required<GitHubRepository>('GET', repoPath(owner, repo));
      const p = repository.permissions;
      if (p && (p.admin || p.maintain || p.push || p.triage)) return { allowed: true };
      return {
        allowed: false,
        reason: `the account has ${p?.pull ? 'read' : 'no'} access to ${owner}/${repo}: labels need triage or write`,
      };
    },
  };
  return client;
}
