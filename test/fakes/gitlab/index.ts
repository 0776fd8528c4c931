/**
 * A fake GitLab for tests: a real HTTP server on 127.0.0.1, port 0, answering the REST API v4
 * endpoints baton uses as GitLab does (SOURCES.md), delivering webhooks to the hooks a test (or
 * `baton connect`) made as GitLab delivers them, plus a programmatic side to seed data, read back
 * what was posted and make the API fail.
 */
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { getRequestListener } from '@hono/node-server';
import type { Context } from 'hono';
import fs from 'node:fs';
import type { SeedRepoOptions } from '../agent/git-repos.js';
import { makeGitRoot } from '../gitea/git-http.js';
import { createFakeGitLabApp } from './app.js';
import { addGitLabRepositoryRoutes, isGitLabGitPath, seedGitLabRepo, serveGitLabGit } from './repository.js';
import { FakeGitLabState, type AccessLevel, type HookRecord, type ItemRecord, type ProjectRecord, type ReviewerState } from './state.js';

export type { AccessLevel, ReviewerState } from './state.js';

/** The GitLab version the fake's `User-Agent` names. */
const VERSION = '17.6.0';

export interface Delivery {
  status: number;
  /** The headers sent (the token included, as GitLab sends it). */
  headers: Record<string, string>;
  eventId: number;
}

export interface FakeGitLab {
  /** Root URL, as `GITLAB_URL` (the API is `<url>/api/v4`). */
  readonly url: string;
  readonly apiUrl: string;
  readonly state: FakeGitLabState;
  /** Every API request, oldest first (`METHOD /path`, no query). */
  readonly requests: readonly string[];
  addUser(username: string, options?: { token?: string; bot?: boolean }): { id: number; username: string; token: string };
  addProject(namespace: string, path: string, options?: { visibility?: ProjectRecord['visibility'] }): void;
  setAccess(namespace: string, path: string, username: string, level: AccessLevel): void;
  /** Membership of a group (`acme`, `acme/platform`): inherited by its subgroups and every project under them. */
  setGroupAccess(group: string, username: string, level: AccessLevel): void;
  addLabel(namespace: string, path: string, name: string, color?: string): number;
  addIssue(namespace: string, path: string, options: { title: string; author: string; labels?: string[] }): number;
  addMergeRequest(
    namespace: string,
    path: string,
    options: { title: string; author: string; source: string; target: string; sha?: string },
  ): number;
  /**
   * Approves a merge request as `username` would in the web UI: the approval, GitLab's system note
   * `approved this merge request` by them, and updated_at; no webhook.
   */
  approve(namespace: string, path: string, iid: number, username: string): void;
  /** Takes `username`'s approval back: the system note `unapproved this merge request`, updated_at; no webhook. */
  unapprove(namespace: string, path: string, iid: number, username: string): void;
  /**
   * "Request changes" as `username` submits it in the web UI: a reviewer's state `requested_changes`
   * (their approval taken back), GitLab's system note `requested changes` by them (written for a
   * non-reviewer too) and updated_at; no webhook.
   */
  requestChanges(namespace: string, path: string, iid: number, username: string): void;
  /** Makes `username` a reviewer of the merge request (state `unreviewed`), as a person would in the web UI; no webhook. */
  addReviewer(namespace: string, path: string, iid: number, username: string): void;
  /** The merge request's reviewers and their states, in the order they were added. */
  reviewers(namespace: string, path: string, iid: number): { username: string; state: ReviewerState }[];
  /** A push to the merge request's source branch: its new head, a new diff version and updated_at; no webhook. Returns the head. */
  pushToMergeRequest(namespace: string, path: string, iid: number, sha?: string): string;
  /** Writes a note as `author` would in the web UI (it moves the item's updated_at), sending no webhook. */
  addNote(namespace: string, path: string, iid: number, author: string, body: string, kind?: 'issue' | 'pull'): { id: number };
  /** Adds a label as `actor` would in the web UI (a label event, updated_at), sending no webhook. */
  labelItem(namespace: string, path: string, iid: number, label: string, actor: string, kind?: 'issue' | 'pull'): void;
  item(namespace: string, path: string, iid: number, kind?: 'issue' | 'pull'): ItemRecord | undefined;
  notes(namespace: string, path: string, iid: number, kind?: 'issue' | 'pull'): { id: number; author: string; body: string }[];
  /** The award emoji on a note (`POST …/notes/:note_id/award_emoji`), oldest first. */
  awards(namespace: string, path: string, iid: number, noteId: number, kind?: 'issue' | 'pull'): { user: string; name: string }[];
  hooks(namespace: string, path: string): HookRecord[];
  /**
   * Delivers `body` to every hook of the project subscribed to `flag` (`issues_events`, …) as
   * GitLab does: POST, JSON, `X-Gitlab-Event`, `X-Gitlab-Token`, `X-Gitlab-Event-UUID`,
   * `X-Gitlab-Webhook-UUID`, `X-Gitlab-Instance`, `Idempotency-Key`. No automatic retry; a hook
   * failing 4 times in a row is disabled for a while, 40 times for good.
   */
  deliver(namespace: string, path: string, flag: string, event: string, body: string): Promise<Delivery[]>;
  /** Resends a logged delivery (the "Resend request" of Recent events): the same Idempotency-Key, a new X-Gitlab-Event-UUID. */
  resend(namespace: string, path: string, eventId: number): Promise<Delivery>;
  /** The next `count` requests matching `path` (a substring) answer `status` with GitLab's error body. */
  failNext(path: string, status: number, count?: number): void;
  /**
   * Gives the project its repository (a bare repository seeded with `main`, its HEAD the default
   * branch), served over smart HTTP at `<url>/<namespace>/<project>.git` with GitLab's
   * authentication; returns its directory. Idempotent.
   */
  gitRepo(namespace: string, path: string, seed?: SeedRepoOptions): string;
  /** Makes `branch` a protected branch (Get a single repository branch then says `protected: true`); pushes to it are not refused by the fake itself. */
  protectBranch(namespace: string, path: string, branch: string): void;
  close(): Promise<void>;
}

export async function createFakeGitLab(options: { now?: () => Date } = {}): Promise<FakeGitLab> {
  const state = new FakeGitLabState(options.now);
  const requests: string[] = [];
  const faults: { path: string; status: number; remaining: number }[] = [];
  const onRequest = (c: Context): Response | undefined => {
    const path = new URL(c.req.url).pathname;
    requests.push(`${c.req.method} ${path}`);
    const fault = faults.find((f) => f.remaining > 0 && path.includes(f.path));
    if (!fault) return undefined;
    fault.remaining -= 1;
    return c.json({ message: fault.status >= 500 ? '500 Internal Server Error' : `${fault.status} fault` }, fault.status as 500);
  };
  let url = '';

  async function post(project: ProjectRecord, hook: HookRecord, event: string, body: string, idempotencyKey: string, trigger: string) {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'user-agent': `GitLab/${VERSION}`,
      'x-gitlab-event': event,
      'x-gitlab-instance': url,
      'x-gitlab-webhook-uuid': hook.uuid,
      'x-gitlab-event-uuid': crypto.randomUUID(),
      'idempotency-key': idempotencyKey,
    };
    if (hook.token) headers['x-gitlab-token'] = hook.token;
    let status = 0;
    try {
      const response = await fetch(hook.url, { method: 'POST', headers, body, signal: AbortSignal.timeout(10_000) });
      status = response.status;
      await response.arrayBuffer();
    } catch {
      status = 0;
    }
    const ok = status >= 200 && status < 300;
    hook.failures = ok ? 0 : hook.failures + 1;
    if (hook.failures >= 40) hook.alertStatus = 'disabled';
    else if (hook.failures >= 4) hook.alertStatus = 'temporarily_disabled';
    else if (ok) hook.alertStatus = 'executable';
    const record = { id: state.id(), hook: hook.id, trigger, event, body, idempotencyKey, status };
    project.hookEvents.push(record);
    return { status, headers, eventId: record.id };
  }

  async function resendEvent(project: ProjectRecord, eventId: number): Promise<Delivery | undefined> {
    const logged = project.hookEvents.find((e) => e.id === eventId);
    const hook = logged && project.hooks.find((h) => h.id === logged.hook);
    if (!logged || !hook) return undefined;
    return post(project, hook, logged.event, logged.body, logged.idempotencyKey, logged.trigger);
  }

  /** `body` to every hook of the project subscribed to `flag` that GitLab would still call. */
  async function deliverAll(project: ProjectRecord, flag: string, event: string, body: string): Promise<Delivery[]> {
    const deliveries: Delivery[] = [];
    for (const hook of project.hooks) {
      if (!hook.flags[flag] || hook.alertStatus !== 'executable') continue;
      deliveries.push(await post(project, hook, event, body, crypto.randomUUID(), flag));
    }
    return deliveries;
  }

  const app = createFakeGitLabApp(state, {
    onRequest,
    resend: async (p, id) => (await resendEvent(p, id))?.status,
    emit: (p, flag, event, body) => void deliverAll(p, flag, event, body),
  });
  let gitRoot: string | null = null;
  const gitRootDir = () => (gitRoot ??= makeGitRoot());
  const protectedBranches = new Set<string>();
  const branchKey = (namespace: string, path: string, branch: string) => `${namespace}/${path}`.toLowerCase() + `:${branch}`;
  addGitLabRepositoryRoutes(app, state, gitRootDir, (p, branch) => protectedBranches.has(branchKey(p.namespace, p.path, branch)));
  const listener = getRequestListener(app.fetch);
  // Git's smart HTTP is GitLab's web side (workhorse), not the API: it has its own handler.
  const server = http.createServer((req, res) => {
    const pathname = new URL(req.url ?? '/', 'http://x').pathname;
    if (!isGitLabGitPath(pathname)) return void listener(req, res);
    requests.push(`${req.method} ${pathname}`);
    serveGitLabGit(state, gitRootDir(), req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const projectOf = (namespace: string, path: string): ProjectRecord => {
    const found = state.project(`${namespace}/${path}`);
    if (!found) throw new Error(`fake GitLab: no project ${namespace}/${path}`);
    return found;
  };
  const itemOf = (namespace: string, path: string, iid: number, kind: 'issue' | 'pull' = 'issue') => {
    const project = projectOf(namespace, path);
    const item = (kind === 'pull' ? project.mergeRequests : project.issues).find((i) => i.iid === iid);
    if (!item) throw new Error(`fake GitLab: no ${kind === 'pull' ? '!' : '#'}${iid} in ${namespace}/${path}`);
    return item;
  };
  // GitLab writes approvals and unapprovals as system notes by whoever clicked
  // (app/services/system_notes/merge_requests_service.rb); every note moves its item's updated_at
  // (Note#touch_noteable; the fake does not throttle it as GitLab's ThrottledTouch does).
  const note = (item: ItemRecord, author: string, body: string, system: boolean) => {
    const at = state.timestamp();
    const record = { id: state.id(), author, body, system, createdAt: at, updatedAt: at, awards: [] };
    item.notes.push(record);
    item.updatedAt = at;
    return record;
  };
  const newItem = (list: ItemRecord[], options: { title: string; author: string; labels?: string[] }): ItemRecord => {
    const at = state.timestamp();
    const item: ItemRecord = {
      id: state.id(),
      iid: Math.max(0, ...list.map((i) => i.iid)) + 1,
      title: options.title,
      description: '',
      state: 'opened',
      author: options.author,
      labels: [...(options.labels ?? [])],
      createdAt: at,
      updatedAt: at,
      notes: [],
      labelEvents: [],
    };
    list.push(item);
    return item;
  };

  return {
    url,
    apiUrl: `${url}/api/v4`,
    state,
    requests,
    addUser(username, opts = {}) {
      const id = state.id();
      state.users.set(username.toLowerCase(), { id, username, name: username, bot: opts.bot ?? false });
      const token = opts.token ?? `glpat-${crypto.randomBytes(10).toString('hex')}`;
      state.tokens.set(token, username);
      return { id, username, token };
    },
    addProject(namespace, path, opts = {}) {
      state.projects.set(`${namespace}/${path}`.toLowerCase(), {
        id: state.id(),
        namespace,
        path,
        visibility: opts.visibility ?? 'private',
        archived: false,
        defaultBranch: 'main',
        labels: [],
        issues: [],
        mergeRequests: [],
        hooks: [],
        hookEvents: [],
        members: new Map(),
      });
    },
    setAccess(namespace, path, username, level) {
      projectOf(namespace, path).members.set(username.toLowerCase(), level);
    },
    setGroupAccess(group, username, level) {
      const key = group.toLowerCase();
      if (!state.groups.has(key)) state.groups.set(key, new Map());
      state.groups.get(key)!.set(username.toLowerCase(), level);
    },
    addLabel(namespace, path, name, color = '#ededed') {
      const record = { id: state.id(), name, color, description: '' };
      projectOf(namespace, path).labels.push(record);
      return record.id;
    },
    addIssue(namespace, path, opts) {
      return newItem(projectOf(namespace, path).issues, opts).iid;
    },
    addMergeRequest(namespace, path, opts) {
      const item = newItem(projectOf(namespace, path).mergeRequests, opts);
      const sha = opts.sha ?? crypto.randomBytes(20).toString('hex');
      item.mr = {
        source: opts.source,
        target: opts.target,
        sha,
        approvedBy: [],
        reviewers: [],
        draft: false,
        versions: [{ id: state.id(), headSha: sha, createdAt: item.createdAt }],
      };
      return item.iid;
    },
    approve(namespace, path, iid, username) {
      const item = itemOf(namespace, path, iid, 'pull');
      item.mr!.approvedBy.push(username);
      note(item, username, 'approved this merge request', true);
    },
    unapprove(namespace, path, iid, username) {
      const item = itemOf(namespace, path, iid, 'pull');
      item.mr!.approvedBy = item.mr!.approvedBy.filter((u) => u.toLowerCase() !== username.toLowerCase());
      note(item, username, 'unapproved this merge request', true);
    },
    requestChanges(namespace, path, iid, username) {
      const item = itemOf(namespace, path, iid, 'pull');
      note(item, username, 'requested changes', true);
      const reviewer = item.mr!.reviewers.find((r) => r.username.toLowerCase() === username.toLowerCase());
      if (!reviewer) return;
      reviewer.state = 'requested_changes';
      item.mr!.approvedBy = item.mr!.approvedBy.filter((u) => u.toLowerCase() !== username.toLowerCase());
    },
    addReviewer(namespace, path, iid, username) {
      const item = itemOf(namespace, path, iid, 'pull');
      if (item.mr!.reviewers.some((r) => r.username.toLowerCase() === username.toLowerCase())) return;
      item.mr!.reviewers.push({ username, state: 'unreviewed', reRequested: false, createdAt: state.timestamp() });
    },
    reviewers(namespace, path, iid) {
      return itemOf(namespace, path, iid, 'pull').mr!.reviewers.map((r) => ({ username: r.username, state: r.state }));
    },
    pushToMergeRequest(namespace, path, iid, sha = crypto.randomBytes(20).toString('hex')) {
      const item = itemOf(namespace, path, iid, 'pull');
      const at = state.timestamp();
      item.mr!.sha = sha;
      item.mr!.versions.push({ id: state.id(), headSha: sha, createdAt: at });
      item.updatedAt = at;
      return sha;
    },
    addNote(namespace, path, iid, author, body, kind = 'issue') {
      return { id: note(itemOf(namespace, path, iid, kind), author, body, false).id };
    },
    labelItem(namespace, path, iid, label, actor, kind = 'issue') {
      const item = itemOf(namespace, path, iid, kind);
      if (!item.labels.includes(label)) item.labels.push(label);
      const at = state.timestamp();
      item.labelEvents.push({ id: state.id(), user: actor, label, action: 'add', createdAt: at });
      item.updatedAt = at;
    },
    item(namespace, path, iid, kind = 'issue') {
      const project = state.project(`${namespace}/${path}`);
      return (kind === 'pull' ? project?.mergeRequests : project?.issues)?.find((i) => i.iid === iid);
    },
    notes(namespace, path, iid, kind = 'issue') {
      return itemOf(namespace, path, iid, kind).notes.map((n) => ({ id: n.id, author: n.author, body: n.body }));
    },
    awards(namespace, path, iid, noteId, kind = 'issue') {
      const note = itemOf(namespace, path, iid, kind).notes.find((n) => n.id === noteId);
      return (note?.awards ?? []).map((a) => ({ user: a.user, name: a.name }));
    },
    hooks(namespace, path) {
      return projectOf(namespace, path).hooks;
    },
    deliver: (namespace, path, flag, event, body) => deliverAll(projectOf(namespace, path), flag, event, body),
    async resend(namespace, path, eventId) {
      const delivery = await resendEvent(projectOf(namespace, path), eventId);
      if (!delivery) throw new Error(`fake GitLab: no hook event ${eventId}`);
      return delivery;
    },
    failNext(path, status, count = 1) {
      faults.push({ path, status, remaining: count });
    },
    gitRepo(namespace, path, seed) {
      return seedGitLabRepo(gitRootDir(), projectOf(namespace, path), seed);
    },
    protectBranch(namespace, path, branch) {
      const project = projectOf(namespace, path);
      protectedBranches.add(branchKey(project.namespace, project.path, branch));
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }).finally(() => {
        if (gitRoot) fs.rmSync(gitRoot, { recursive: true, force: true });
      }),
  };
}
