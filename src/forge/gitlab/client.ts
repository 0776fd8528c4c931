import { ForgeError } from '../errors.js';
import { normalizeLabelColor } from '../gitea/index.js';
import { createForgeTransport, nextLink, uniqueById } from '../transport.js';
import type { ForgeClient, ForgeLabel, ItemKind } from '../types.js';
import {
  ACCESS,
  HOOK_EVENTS,
  accessOf,
  labelsNamed,
  toApproval,
  toReviewNote,
  toComment,
  toHook,
  toIssue,
  toLabel,
  toPermission,
  toPullRequest,
  toRepository,
  toTimelineEvent,
  toUser,
} from './map.js';
import type {
  GitLabApprovals,
  GitLabHook,
  GitLabIssue,
  GitLabLabel,
  GitLabLabelEvent,
  GitLabMember,
  GitLabMergeRequest,
  GitLabNote,
  GitLabProject,
  GitLabUser,
  GitLabVersion,
} from './wire.js';

export interface GitLabClientOptions {
  /** The GitLab root (GITLAB_URL): `https://gitlab.com` or a self-managed instance; the API is `<root>/api/v4`. */
  rootUrl: string;
  /** A personal, project or group access token with the `api` scope. */
  token: string;
  /** @default globalThis.fetch */
  fetch?: typeof globalThis.fetch;
  /** @default 15_000 */
  timeoutMs?: number;
}

/** GitLab's largest page (`per_page`). */
const PAGE_SIZE = 100;
/** Stops a list that never ends (a proxy repeating `Link`) from looping forever. */
const MAX_PAGES = 100;

/** `<root>/api/v4`, whatever the root's trailing slashes. */
export function gitlabApiUrl(rootUrl: string): string {
  return `${rootUrl.replace(/\/+$/, '')}/api/v4`;
}

/** GitLab's reaction names (award emoji) for the port's GitHub-style contents. */
const EMOJI: Readonly<Record<string, string>> = {
  '+1': 'thumbsup',
  '-1': 'thumbsdown',
  laugh: 'laughing',
  hooray: 'tada',
  confused: 'confused',
  heart: 'heart',
  rocket: 'rocket',
  eyes: 'eyes',
};

/**
 * A `ForgeClient` for GitLab (REST API v4). A project is addressed by its URL-encoded path
 * (`acme%2Fapp`), its issues and merge requests by `iid`; the two are numbered apart, so every
 * call on "an issue or pull request" takes the port's `kind` (`pull` for a merge request).
 * Comments are notes (GitLab's own system notes are left out); labels are added and removed by
 * name; the permission of a user is the access level of their membership (inherited ones
 * included). A note is edited or reacted to through its issue: the client remembers where the
 * notes it created or listed live.
 */
export function createGitLabClient(options: GitLabClientOptions): ForgeClient {
  const root = options.rootUrl.replace(/\/+$/, '');
  const http = createForgeTransport({
    forge: 'GitLab',
    apiBase: gitlabApiUrl(root),
    token: options.token,
    fetch: options.fetch,
    timeoutMs: options.timeoutMs,
    headers: { 'private-token': options.token, accept: 'application/json', 'user-agent': 'baton' },
  });
  const project = (owner: string, repo: string) => `/projects/${encodeURIComponent(`${owner}/${repo}`)}`;
  const itemPath = (owner: string, repo: string, number: number, kind?: ItemKind) =>
    `${project(owner, repo)}/${kind === 'pull' ? 'merge_requests' : 'issues'}/${number}`;
  const itemUrl = (owner: string, repo: string, number: number, kind?: ItemKind) =>
    `${root}/${owner}/${repo}/-/${kind === 'pull' ? 'merge_requests' : 'issues'}/${number}`;
  /** Where each note seen lives: edits and award emoji go through its issue or merge request. */
  const noteHomes = new Map<number, { owner: string; repo: string; number: number; kind: ItemKind }>();
  const MAX_REMEMBERED = 10_000;
  const remember = (id: number, home: { owner: string; repo: string; number: number; kind: ItemKind }) => {
    if (noteHomes.size >= MAX_REMEMBERED) noteHomes.delete(noteHomes.keys().next().value!);
    noteHomes.set(id, home);
  };

  async function listAll<T>(path: string, keep?: (items: T[]) => { items: T[]; done: boolean }): Promise<T[]> {
    const all: T[] = [];
    let url: string | undefined = `${path}${path.includes('?') ? '&' : '?'}per_page=${PAGE_SIZE}`;
    for (let page = 1; url !== undefined && page <= MAX_PAGES; page++) {
      const { items, headers } = await http.list<T>('GET', url);
      const kept = keep ? keep(items) : { items, done: false };
      all.push(...kept.items);
      if (kept.done || items.length === 0) break;
      // `Link: rel="next"`; past 10,000 items GitLab leaves out the totals but still links the next page.
      url = nextLink(headers.get('link'));
    }
    return all;
  }

  async function labelsByName(owner: string, repo: string): Promise<Map<string, ForgeLabel>> {
    const labels = await listAll<GitLabLabel>(`${project(owner, repo)}/labels`);
    return new Map(labels.map((l) => [l.name.toLowerCase(), toLabel(l)]));
  }

  async function userId(username: string): Promise<number> {
    const users = await http.required<GitLabUser[]>('GET', `/users?username=${encodeURIComponent(username)}`);
    const user = Array.isArray(users) ? users.find((u) => u.username.toLowerCase() === username.toLowerCase()) : undefined;
    if (!user) throw new ForgeError(`GitLab has no user ${username}`, { kind: 'http', status: 404, forgeMessage: '404 User Not Found' });
    return user.id;
  }

  async function notes(owner: string, repo: string, number: number, kind?: ItemKind): Promise<GitLabNote[]> {
    const all = await listAll<GitLabNote>(`${itemPath(owner, repo, number, kind)}/notes?sort=asc&order_by=created_at`);
    return uniqueById(all.filter((n) => !n.system));
  }

  function homeOf(commentId: number) {
    const home = noteHomes.get(commentId);
    if (!home)
      throw new ForgeError(`GitLab reaches note ${commentId} through its issue: list or create it with this client first`, {
        kind: 'protocol',
      });
    return home;
  }

  const client: ForgeClient = {
    async getCurrentUser() {
      return toUser(await http.required<GitLabUser>('GET', '/user'));
    },
    async getIssue(owner, repo, number) {
      const issue = await http.required<GitLabIssue>('GET', itemPath(owner, repo, number));
      return toIssue(issue, await labelsByName(owner, repo));
    },
    async getPullRequest(owner, repo, number) {
      const mr = await http.required<GitLabMergeRequest>('GET', itemPath(owner, repo, number, 'pull'));
      return toPullRequest(mr, `${owner}/${repo}`, await labelsByName(owner, repo));
    },
    async listIssueLabels(owner, repo, number, kind) {
      const item = await http.required<{ labels: string[] }>('GET', itemPath(owner, repo, number, kind));
      return labelsNamed(item.labels ?? [], await labelsByName(owner, repo));
    },
    async listComments(owner, repo, number, kind) {
      const url = itemUrl(owner, repo, number, kind);
      return (await notes(owner, repo, number, kind)).map((n) => {
        remember(n.id, { owner, repo, number, kind: kind ?? 'issue' });
        return toComment(n, url);
      });
    },
    async createComment(owner, repo, number, body, kind) {
      const note = await http.required<GitLabNote>('POST', `${itemPath(owner, repo, number, kind)}/notes`, { body });
      remember(note.id, { owner, repo, number, kind: kind ?? 'issue' });
      return toComment(note, itemUrl(owner, repo, number, kind));
    },
    async editComment(owner, repo, commentId, body) {
      const home = homeOf(commentId);
      const path = `${itemPath(owner, repo, home.number, home.kind)}/notes/${commentId}`;
      return toComment(await http.required<GitLabNote>('PUT', path, { body }), itemUrl(owner, repo, home.number, home.kind));
    },
    async addCommentReaction(owner, repo, commentId, content, on) {
      // A note from a webhook was never listed by this client: its issue or merge request comes with it.
      const home = on ? { number: on.number, kind: on.kind ?? 'issue' } : homeOf(commentId);
      const name = EMOJI[content] ?? content;
      try {
        await http.exchange('POST', `${itemPath(owner, repo, home.number, home.kind)}/notes/${commentId}/award_emoji`, { name });
      } catch (err) {
        // The same emoji twice by one user is refused ("has already been taken"): it is there, which is what was asked.
        if (!(
          err instanceof ForgeError &&
          (err.status === 400 || err.status === 404) &&
          /already been taken/i.test(err.forgeMessage ?? '')
        ))
          throw err;
      }
    },
    async listRepoLabels(owner, repo) {
      return [...(await labelsByName(owner, repo)).values()];
    },
    async addIssueLabels(owner, repo, number, labels, kind) {
      // `add_labels` creates a name the project does not know; the port ignores unknown names, so
      // names and ids are both resolved against the project's labels first.
      const known = await labelsByName(owner, repo);
      const byId = new Map([...known.values()].map((l) => [l.id, l]));
      const names = labels.flatMap((l) => {
        const found = typeof l === 'number' ? byId.get(l) : known.get(l.toLowerCase());
        return found ? [found.name] : [];
      });
      if (names.length === 0) return client.listIssueLabels(owner, repo, number, kind);
      const item = await http.required<{ labels: string[] }>('PUT', itemPath(owner, repo, number, kind), { add_labels: names.join(',') });
      return labelsNamed(item.labels ?? [], known);
    },
    async removeIssueLabel(owner, repo, number, labelId, kind) {
      const label = [...(await labelsByName(owner, repo)).values()].find((l) => l.id === labelId);
      if (!label) throw new ForgeError(`GitLab has no label ${labelId} in ${owner}/${repo}`, { kind: 'http', status: 404 });
      // Removing a label the item does not carry is no error on GitLab.
      await http.required<unknown>('PUT', itemPath(owner, repo, number, kind), { remove_labels: label.name });
    },
    async listPullReviews(owner, repo, number) {
      const answer = await http.required<GitLabApprovals>('GET', `${itemPath(owner, repo, number, 'pull')}/approvals`);
      return (answer.approved_by ?? []).map((a) => toApproval(a.user));
    },
    async listReviewEvents(owner, repo, number) {
      // An approval has no time in the approvals API, and an approval taken back leaves no trace
      // there at all; both leave a system note by whoever clicked, the moment they did, in GitLab's
      // words (gitlabhq app/services/system_notes/merge_requests_service.rb, `approve_mr` and
      // `unapprove_mr`; the latter under ee/ in older versions), and so does "Request changes"
      // (`requested_changes`; the reviewers API has states but no time). An unapproval and a
      // request for changes are what their webhooks are to baton: a review rejecting
      // (src/ingress/gitlab/normalize.ts).
      const all = await listAll<GitLabNote>(`${itemPath(owner, repo, number, 'pull')}/notes?sort=asc&order_by=created_at`);
      const notes = uniqueById(all).flatMap((n) => {
        const state = n.system ? REVIEW_NOTES[n.body.trim()] : undefined;
        return state ? [{ note: n, state }] : [];
      });
      if (notes.length === 0) return [];
      // The notes name no commit; the head a review was given on is the one of the newest diff
      // version made before it (one per push: GET …/versions, newest first), which is the
      // `last_commit` its webhook carried.
      const versions = await listAll<GitLabVersion>(`${itemPath(owner, repo, number, 'pull')}/versions`);
      const headAt = (at: string) =>
        versions
          .filter((v) => !(Date.parse(v.created_at) > Date.parse(at)))
          .sort((a, b) => Date.parse(b.created_at) - Date.parse(a.created_at) || b.id - a.id)[0]?.head_commit_sha ?? '';
      return notes.map(({ note, state }) => toReviewNote(note, state, headAt(note.created_at)));
    },
    async listIssuesUpdatedSince(owner, repo, since) {
      // `updated_after` is inclusive; `scope=all` (not only the caller's), every state.
      const query = `scope=all&order_by=updated_at&sort=desc&updated_after=${encodeURIComponent(since)}`;
      const issues = await listAll<GitLabIssue>(`${project(owner, repo)}/issues?${query}`);
      const known = await labelsByName(owner, repo);
      return uniqueById(issues.map((i) => toIssue(i, known)));
    },
    async listPullRequestsUpdatedSince(owner, repo, since) {
      const query = `scope=all&state=all&order_by=updated_at&sort=desc&updated_after=${encodeURIComponent(since)}`;
      const mrs = await listAll<GitLabMergeRequest>(`${project(owner, repo)}/merge_requests?${query}`);
      const known = await labelsByName(owner, repo);
      return uniqueById(mrs.map((mr) => toPullRequest(mr, `${owner}/${repo}`, known)));
    },
    async listTimeline(owner, repo, number, since, kind) {
      // Label changes are resource label events; GitLab has no timeline entry naming who pushed.
      const events = await listAll<GitLabLabelEvent>(`${itemPath(owner, repo, number, kind)}/resource_label_events`);
      const sinceMs = since === undefined ? -Infinity : Date.parse(since);
      return uniqueById(events.map(toTimelineEvent).filter((e) => !(Date.parse(e.createdAt) < sinceMs))).sort((a, b) => a.id - b.id);
    },
    async getUserPermission(owner, repo, username) {
      const id = await userId(username);
      try {
        // `members/all`: direct and inherited (group) memberships, the highest level counting.
        const member = await http.required<GitLabMember>('GET', `${project(owner, repo)}/members/all/${id}`);
        return toPermission(member.access_level);
      } catch (err) {
        // 404 is "not a member" (`404 Not found`) when the project itself is there; a missing
        // project is a 404 too (`404 Project Not Found`), which the caller must see.
        if (!(err instanceof ForgeError && err.status === 404)) throw err;
        await http.required<GitLabProject>('GET', project(owner, repo));
        return 'none';
      }
    },
    async getRepository(owner, repo) {
      return toRepository(await http.required<GitLabProject>('GET', project(owner, repo)));
    },
    async listHooks(owner, repo) {
      return (await listAll<GitLabHook>(`${project(owner, repo)}/hooks`)).map(toHook);
    },
    async createHook(owner, repo, hook) {
      const body = { url: hook.url, token: hook.secret, enable_ssl_verification: true, ...hookFlags(hook.events) };
      return toHook(await http.required<GitLabHook>('POST', `${project(owner, repo)}/hooks`, body));
    },
    async editHook(owner, repo, id, hook) {
      // A token left out of the edit keeps the one the hook has.
      const body = { url: hook.url, push_events_branch_filter: '', ...hookFlags(hook.events) };
      return toHook(await http.required<GitLabHook>('PUT', `${project(owner, repo)}/hooks/${id}`, body));
    },
    async deleteHook(owner, repo, id) {
      await http.exchange('DELETE', `${project(owner, repo)}/hooks/${id}`);
    },
    async createLabel(owner, repo, label) {
      const body = { name: label.name, color: normalizeLabelColor(label.color), description: label.description ?? '' };
      return toLabel(await http.required<GitLabLabel>('POST', `${project(owner, repo)}/labels`, body));
    },
    async addSelfAsReviewer(owner, repo, number) {
      // "Update MR" replaces `reviewer_ids` whole (doc/api/merge_requests.md): the others are kept.
      const me = await client.getCurrentUser();
      const mr = await http.required<{ reviewers?: GitLabUser[] }>('GET', itemPath(owner, repo, number, 'pull'));
      const ids = (mr.reviewers ?? []).map((r) => r.id);
      if (ids.includes(me.id)) return;
      await http.required<unknown>('PUT', itemPath(owner, repo, number, 'pull'), { reviewer_ids: [...ids, me.id] });
    },
    async issueWriteAccess(owner, repo) {
      // Labels on issues need Planner or Reporter and up; a Guest may only comment.
      const level = accessOf(await http.required<GitLabProject>('GET', project(owner, repo)));
      if (level >= ACCESS.planner) return { allowed: true };
      return {
        allowed: false,
        reason: `the account's access level in ${owner}/${repo} is ${level || 'none'}: labels need Planner (15) or Reporter (20) and up`,
      };
    },
  };
  return client;
}

/** GitLab's system notes of an approval and of one taken back, as review states. */
const REVIEW_NOTES: Readonly<Record<string, 'APPROVED' | 'REQUEST_CHANGES'>> = {
  'approved this merge request': 'APPROVED',
  'unapproved this merge request': 'REQUEST_CHANGES',
  // "Request changes" (a review submitted so, or the reviewer state set through the API):
  // UpdateReviewerStateService#create_requested_changes writes it by the reviewer
  // (SystemNoteService.requested_changes), the webhook's `changes.reviewers` turning to
  // `requested_changes` (src/ingress/gitlab/normalize.ts).
  'requested changes': 'REQUEST_CHANGES',
};

/** Every flag baton knows, true for the events asked for and false for the rest (GitLab's `push_events` defaults to true). */
function hookFlags(events: readonly string[]): Record<string, boolean> {
  return Object.fromEntries(HOOK_EVENTS.map((name) => [name, events.includes(name)]));
}
