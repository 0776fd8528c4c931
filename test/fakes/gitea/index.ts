/**
 * A fake Gitea for tests: a real HTTP server on 127.0.0.1 (port 0) that answers the API v1
 * endpoints baton uses, exactly as reference/gitea/API.md describes them, and git's smart HTTP
 * for repositories made with `git` (real bare repositories, `git http-backend`), plus a
 * programmatic side to seed data, read back what was posted, and inject faults. SOURCES.md says
 * where each behaviour comes from.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { getRequestListener } from '@hono/node-server';
import { createBareRepo, git, type SeedRepoOptions } from '../agent/git-repos.js';
import { createFakeGiteaApp } from './app.js';
import { bareRepoPath, isGitPath, makeGitRoot, readBranch, serveGit } from './git-http.js';
import {
  FakeGiteaState,
  type CommentRecord,
  type IssueRecord,
  type LabelRecord,
  type Permission,
  type RepoRecord,
  type ReviewRecord,
  type ReviewState,
} from './state.js';

export { FakeGiteaState } from './state.js';
export type { Permission, ReviewState } from './state.js';

export interface FakeGiteaOptions {
  /** Report repository owners as `owner` in the permission endpoint, like Gitea before 1.24. @default false */
  legacyOwnerPermission?: boolean;
  /** Show a hook's review flag as its three delivery types, like Gitea up to 1.23. @default false */
  legacyHookReviewEvents?: boolean;
  /** The fake's clock (every created_at / updated_at; Gitea keeps whole seconds). @default the system clock */
  now?: () => Date;
}

/** A webhook as stored, secret included (no answer of the API shows it). */
export interface StoredHook {
  id: number;
  url: string;
  contentType: string;
  secret: string;
  events: string[];
  active: boolean;
  branchFilter: string;
}

/** Which requests a fault applies to; all given fields must match. */
export interface FaultMatch {
  method?: string;
  /** Substring of, or pattern for, the request path (without query). */
  path?: string | RegExp;
}

export interface RequestRecord {
  method: string;
  path: string;
  status: number | 'dropped';
  /** How the request authenticated; never the token itself. */
  auth: 'token' | 'bearer' | 'query' | 'basic' | 'none';
}

export interface PostedComment {
  id: number;
  author: string;
  body: string;
}

type Fault =
  | { kind: 'status'; remaining: number; status: number; body: unknown; headers: Record<string, string>; match: FaultMatch }
  | { kind: 'drop'; remaining: number; match: FaultMatch }
  | { kind: 'lose-answer'; remaining: number; match: FaultMatch }
  | { kind: 'delay'; remaining: number; ms: number; match: FaultMatch };

export interface FakeGitea {
  /** Root URL (no `/api/v1`), as `GITEA_URL` would be. */
  readonly url: string;
  readonly state: FakeGiteaState;
  /** Every request, oldest first. */
  readonly requests: readonly RequestRecord[];
  /**
   * Creates a user and a token for it (generated unless given). `scopes` makes it a scoped token
   * (`read:user`, `write:issue`, `write:repository`, `all`…); without, it may do everything.
   */
  addUser(
    login: string,
    options?: { token?: string; isAdmin?: boolean; fullName?: string; scopes?: string[] },
  ): { id: number; login: string; token: string };
  addToken(login: string, token?: string, scopes?: string[]): string;
  /**
   * Creates the repository, and its owner as a user when missing. With `git`, it also gets a real
   * bare repository (seeded as `createBareRepo` does, on its default branch) served over git's
   * smart HTTP at `<url>/<owner>/<name>.git`.
   */
  addRepo(
    owner: string,
    name: string,
    options?: { archived?: boolean; private?: boolean; defaultBranch?: string; git?: true | SeedRepoOptions },
  ): RepoRecord;
  /** The bare repository on disk of a repository made with `git` (to read what was pushed). */
  gitDir(owner: string, name: string): string;
  /** A branch protection rule (a name or a glob such as `release/*`). */
  protectBranch(owner: string, name: string, pattern: string): void;
  setArchived(owner: string, name: string, archived: boolean): void;
  addCollaborator(owner: string, name: string, login: string, permission: Permission): void;
  addLabel(owner: string, name: string, label: { name: string; color?: string; description?: string; exclusive?: boolean }): LabelRecord;
  addIssue(
    owner: string,
    name: string,
    issue: { title: string; author: string; body?: string; labels?: string[]; state?: 'open' | 'closed' },
  ): IssueRecord;
  addPullRequest(
    owner: string,
    name: string,
    pr: {
      title: string;
      author: string;
      body?: string;
      head?: string;
      base?: string;
      headSha?: string;
      draft?: boolean;
      labels?: string[];
    },
  ): IssueRecord;
  addComment(owner: string, name: string, number: number, comment: { author: string; body: string }): CommentRecord;
  /** Adds a label to an issue or PR as `by` would in the UI: a `label` timeline entry, updated_at bumped. */
  labelIssue(owner: string, name: string, number: number, label: string, by: string): void;
  /** Removes a label as `by` would. */
  unlabelIssue(owner: string, name: string, number: number, label: string, by: string): void;
  /** A push of new commits to a PR's head branch by `by`: new head SHA, a `pull_push` timeline entry. Returns the SHA. */
  pushToPullRequest(owner: string, name: string, number: number, push: { by: string; sha?: string }): string;
  /** Closes (or reopens) an issue or PR. */
  setIssueState(owner: string, name: string, number: number, state: 'open' | 'closed'): void;
  addReview(owner: string, name: string, number: number, review: { author: string; state: ReviewState; body?: string }): ReviewRecord;
  /** Comments on an issue or PR, oldest first. */
  comments(owner: string, name: string, number: number): PostedComment[];
  /** The reactions on a comment, oldest first: who gave which. */
  reactions(commentId: number): Array<{ user: string; content: string }>;
  /** The repository's webhooks as stored, oldest first. */
  hooks(owner: string, name: string): StoredHook[];
  /** The repository's label names, as many times as they exist. */
  labelNames(owner: string, name: string): string[];
  /**
   * The next `count` matching requests answer `status` (default 500) with a Gitea error body and
   * `headers` (e.g. `{ 'retry-after': '2' }` on a 429).
   */
  failNext(count: number, options?: FaultMatch & { status?: number; body?: unknown; headers?: Record<string, string> }): void;
  /** The next `count` matching requests have their connection destroyed without an answer. */
  dropNext(count: number, match?: FaultMatch): void;
  /**
   * The next `count` matching requests are carried out (a comment is posted), but the answer is
   * lost: the connection is destroyed instead of answering, as when a proxy or the network drops
   * it on the way back. The client cannot tell whether its request took effect.
   */
  loseAnswerNext(count: number, match?: FaultMatch): void;
  /** The next `count` matching requests wait `ms` before being handled. */
  delayNext(count: number, ms: number, match?: FaultMatch): void;
  /** Every request waits `ms` before being handled, until set back to 0. */
  setLatency(ms: number): void;
  clearFaults(): void;
  close(): Promise<void>;
}

export async function createFakeGitea(options: FakeGiteaOptions = {}): Promise<FakeGitea> {
  const state = new FakeGiteaState(options.now);
  const requests: RequestRecord[] = [];
  let faults: Fault[] = [];
  let latencyMs = 0;
  let url = '';
  let gitRoot: string | null = null;
  const gitRootDir = () => (gitRoot ??= makeGitRoot());
  const app = createFakeGiteaApp({
    state,
    baseUrl: () => url,
    gitRoot: gitRootDir,
    legacyOwnerPermission: options.legacyOwnerPermission ?? false,
    legacyHookReviewEvents: options.legacyHookReviewEvents ?? false,
  });
  const listener = getRequestListener(app.fetch);
  const sockets = new Set<import('node:net').Socket>();
  const pendingTimers = new Set<NodeJS.Timeout>();

  const takeFault = (method: string, path: string): Fault | undefined => {
    const fault = faults.find((f) => f.remaining > 0 && matches(f.match, method, path));
    if (fault) fault.remaining -= 1;
    faults = faults.filter((f) => f.remaining > 0);
    return fault;
  };

  // Git's smart HTTP is Gitea's web side, not its API: it has its own handler.
  const dispatch = (req: http.IncomingMessage, res: http.ServerResponse) => {
    if (isGitPath(new URL(req.url ?? '/', 'http://x').pathname)) {
      serveGit({ state, root: gitRootDir, userOf: (token) => userOfToken(token) }, req, res);
      return;
    }
    void listener(req, res);
  };
  const userOfToken = (token: string) => {
    const id = state.tokens.get(token);
    return id === undefined ? undefined : state.users.get(id);
  };

  const server = http.createServer((req, res) => {
    const method = req.method ?? 'GET';
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const record: RequestRecord = { method, path, status: 0, auth: authKind(req) };
    requests.push(record);
    res.on('finish', () => (record.status = res.statusCode));
    const handle = () => {
      const fault = takeFault(method, path);
      if (fault?.kind === 'drop') {
        record.status = 'dropped';
        req.socket.destroy();
        return;
      }
      if (fault?.kind === 'status') {
        const body = fault.body ?? { message: `injected failure (${fault.status})`, url: `${url}/api/swagger` };
        res.writeHead(fault.status, { 'content-type': 'application/json;charset=utf-8', ...fault.headers });
        res.end(JSON.stringify(body));
        return;
      }
      if (fault?.kind === 'lose-answer') {
        // Let the API do its work, then throw its answer away: the socket dies before a byte of it.
        record.status = 'dropped';
        res.write = () => true;
        res.end = ((..._args: unknown[]) => {
          req.socket.destroy();
          return res;
        }) as typeof res.end;
        res.writeHead = (() => res) as typeof res.writeHead;
      }
      const wait = (fault?.kind === 'delay' ? fault.ms : 0) + latencyMs;
      if (wait > 0) {
        const timer = setTimeout(() => {
          pendingTimers.delete(timer);
          dispatch(req, res);
        }, wait);
        pendingTimers.add(timer);
        return;
      }
      dispatch(req, res);
    };
    handle();
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const user = (login: string) => {
    const found = state.userByLogin(login);
    if (!found) throw new Error(`fake Gitea: no user "${login}"; call addUser first`);
    return found;
  };
  const repoOf = (owner: string, name: string) => {
    const found = state.repo(owner, name);
    if (!found) throw new Error(`fake Gitea: no repository ${owner}/${name}; call addRepo first`);
    return found;
  };
  const labelIds = (repo: RepoRecord, names: string[] = []) =>
    names.map((n) => {
      const label = state.repoLabels(repo.id).find((l) => l.name === n);
      if (!label) throw new Error(`fake Gitea: no label "${n}" in ${repo.owner}/${repo.name}`);
      return label.id;
    });
  const addUser: FakeGitea['addUser'] = (login, opts = {}) => {
    let record = state.userByLogin(login);
    if (!record) {
      record = {
        id: state.nextId('user'),
        login,
        fullName: opts.fullName ?? '',
        email: `${login.toLowerCase()}@example.com`,
        isAdmin: opts.isAdmin ?? false,
        createdAt: state.timestamp(),
      };
      state.users.set(record.id, record);
    }
    return { id: record.id, login: record.login, token: addToken(login, opts.token, opts.scopes) };
  };
  const addToken = (login: string, token = crypto.randomBytes(20).toString('hex'), scopes?: string[]) => {
    state.tokens.set(token, user(login).id);
    if (scopes) state.tokenScopes.set(token, new Set(scopes));
    return token;
  };
  const addIssueRecord = (
    owner: string,
    name: string,
    fields: Omit<IssueRecord, 'id' | 'repoId' | 'number' | 'createdAt' | 'updatedAt'>,
  ) => {
    const repo = repoOf(owner, name);
    const now = state.timestamp();
    const issue: IssueRecord = {
      ...fields,
      id: state.nextId('issue'),
      repoId: repo.id,
      number: repo.nextIndex++,
      createdAt: now,
      updatedAt: now,
    };
    state.issues.set(issue.id, issue);
    // NewIssueWithIndex adds the labels given at creation through newIssueLabel, which writes a
    // `label` timeline entry by the poster for each.
    for (const labelId of issue.labelIds) state.addTimeline(issue, { type: 'label', authorId: issue.authorId, labelId, content: '1' });
    return issue;
  };
  const issueIn = (owner: string, name: string, number: number) => {
    const issue = state.issue(repoOf(owner, name).id, number);
    if (!issue) throw new Error(`fake Gitea: no issue #${number} in ${owner}/${name}`);
    return issue;
  };

  return {
    get url() {
      return url;
    },
    state,
    requests,
    addUser,
    addToken,
    addRepo(owner, name, opts = {}) {
      if (!state.userByLogin(owner)) addUser(owner);
      const existing = state.repo(owner, name);
      if (existing) return existing;
      const repo: RepoRecord = {
        id: state.nextId('repo'),
        owner: user(owner).login,
        name,
        archived: opts.archived ?? false,
        private: opts.private ?? false,
        defaultBranch: opts.defaultBranch ?? 'main',
        nextIndex: 1,
        collaborators: new Map(),
        protectedBranches: [],
      };
      state.repos.set(repo.id, repo);
      if (opts.git) {
        const seed = opts.git === true ? {} : opts.git;
        const dir = bareRepoPath(gitRootDir(), repo.owner, repo.name);
        fs.mkdirSync(path.dirname(dir), { recursive: true });
        createBareRepo(path.dirname(dir), repo.name.toLowerCase(), { develop: null, ...seed, defaultBranch: undefined });
        // The repository's default branch is its HEAD (a copy of main when no seed made it).
        if (!readBranch(dir, repo.defaultBranch)) git(dir, 'branch', repo.defaultBranch, 'main');
        git(dir, 'symbolic-ref', 'HEAD', `refs/heads/${repo.defaultBranch}`);
      }
      return repo;
    },
    gitDir(owner, name) {
      const repo = repoOf(owner, name);
      const dir = bareRepoPath(gitRootDir(), repo.owner, repo.name);
      if (!fs.existsSync(dir)) throw new Error(`fake Gitea: ${owner}/${name} has no git repository; addRepo it with git`);
      return dir;
    },
    protectBranch(owner, name, pattern) {
      repoOf(owner, name).protectedBranches.push(pattern);
    },
    setArchived(owner, name, archived) {
      repoOf(owner, name).archived = archived;
    },
    addCollaborator(owner, name, login, permission) {
      repoOf(owner, name).collaborators.set(user(login).login.toLowerCase(), permission);
    },
    addLabel(owner, name, label) {
      const repo = repoOf(owner, name);
      const record: LabelRecord = {
        id: state.nextId('label'),
        repoId: repo.id,
        name: label.name,
        color: label.color ?? 'ee0701',
        description: label.description ?? '',
        exclusive: label.exclusive ?? false,
      };
      state.labels.set(record.id, record);
      return record;
    },
    addIssue(owner, name, issue) {
      return addIssueRecord(owner, name, {
        title: issue.title,
        body: issue.body ?? '',
        state: issue.state ?? 'open',
        authorId: user(issue.author).id,
        labelIds: labelIds(repoOf(owner, name), issue.labels),
        pull: null,
      });
    },
    addPullRequest(owner, name, pr) {
      const repo = repoOf(owner, name);
      return addIssueRecord(owner, name, {
        title: pr.title,
        body: pr.body ?? '',
        state: 'open',
        authorId: user(pr.author).id,
        labelIds: labelIds(repo, pr.labels),
        pull: {
          headRef: pr.head ?? 'feature',
          headSha: pr.headSha ?? crypto.randomBytes(20).toString('hex'),
          baseRef: pr.base ?? repo.defaultBranch,
          baseSha: crypto.randomBytes(20).toString('hex'),
          draft: pr.draft ?? false,
          merged: false,
          mergeable: true,
        },
      });
    },
    addComment(owner, name, number, comment) {
      const repo = repoOf(owner, name);
      if (!state.issue(repo.id, number)) throw new Error(`fake Gitea: no issue #${number} in ${owner}/${name}`);
      const now = state.timestamp();
      const record: CommentRecord = {
        id: state.nextId('comment'),
        repoId: repo.id,
        issueNumber: number,
        authorId: user(comment.author).id,
        body: comment.body,
        createdAt: now,
        updatedAt: now,
      };
      state.comments.set(record.id, record);
      state.issue(repo.id, number)!.updatedAt = now;
      return record;
    },
    addReview(owner, name, number, review) {
      const repo = repoOf(owner, name);
      const issue = state.issue(repo.id, number);
      if (!issue?.pull) throw new Error(`fake Gitea: no pull request #${number} in ${owner}/${name}`);
      const record: ReviewRecord = {
        id: state.nextId('review'),
        repoId: repo.id,
        number,
        authorId: user(review.author).id,
        state: review.state,
        body: review.body ?? '',
        commitId: issue.pull.headSha,
        submittedAt: state.timestamp(),
      };
      state.reviews.set(record.id, record);
      return record;
    },
    labelIssue(owner, name, number, label, by) {
      const issue = issueIn(owner, name, number);
      const [id] = labelIds(repoOf(owner, name), [label]);
      if (issue.labelIds.includes(id!)) return;
      issue.labelIds = [...issue.labelIds, id!].sort((a, b) => state.labels.get(a)!.name.localeCompare(state.labels.get(b)!.name));
      state.addTimeline(issue, { type: 'label', authorId: user(by).id, labelId: id!, content: '1' });
    },
    unlabelIssue(owner, name, number, label, by) {
      const issue = issueIn(owner, name, number);
      const [id] = labelIds(repoOf(owner, name), [label]);
      if (!issue.labelIds.includes(id!)) return;
      issue.labelIds = issue.labelIds.filter((l) => l !== id);
      state.addTimeline(issue, { type: 'label', authorId: user(by).id, labelId: id!, content: '' });
    },
    pushToPullRequest(owner, name, number, push) {
      const issue = issueIn(owner, name, number);
      if (!issue.pull) throw new Error(`fake Gitea: #${number} in ${owner}/${name} is not a pull request`);
      const sha = push.sha ?? crypto.randomBytes(20).toString('hex');
      issue.pull.headSha = sha;
      // services/pull/pull.go: a push with new commits writes a `pull_push` comment whose content
      // lists the commit ids; that comment bumps updated_at.
      state.addTimeline(issue, {
        type: 'pull_push',
        authorId: user(push.by).id,
        content: JSON.stringify({ is_force_push: false, commit_ids: [sha] }),
      });
      return sha;
    },
    setIssueState(owner, name, number, next) {
      const issue = issueIn(owner, name, number);
      issue.state = next;
      issue.updatedAt = state.timestamp();
    },
    comments(owner, name, number) {
      const repo = repoOf(owner, name);
      return state.issueComments(repo.id, number).map((c) => ({ id: c.id, author: state.users.get(c.authorId)!.login, body: c.body }));
    },
    reactions(commentId) {
      return (state.reactions.get(commentId) ?? []).map((r) => ({ user: state.users.get(r.userId)!.login, content: r.content }));
    },
    hooks(owner, name) {
      return state.repoHooks(repoOf(owner, name).id).map((h) => ({
        id: h.id,
        url: h.url,
        contentType: h.contentType,
        secret: h.secret,
        events: [...h.events].sort(),
        active: h.active,
        branchFilter: h.branchFilter,
      }));
    },
    labelNames(owner, name) {
      return state.repoLabels(repoOf(owner, name).id).map((l) => l.name);
    },
    failNext(count, opts = {}) {
      const { status = 500, body, headers = {}, ...match } = opts;
      faults.push({ kind: 'status', remaining: count, status, body, headers, match });
    },
    dropNext(count, match = {}) {
      faults.push({ kind: 'drop', remaining: count, match });
    },
    loseAnswerNext(count, match = {}) {
      faults.push({ kind: 'lose-answer', remaining: count, match });
    },
    delayNext(count, ms, match = {}) {
      faults.push({ kind: 'delay', remaining: count, ms, match });
    },
    setLatency(ms) {
      latencyMs = Math.max(0, ms);
    },
    clearFaults() {
      faults = [];
      latencyMs = 0;
    },
    async close() {
      for (const timer of pendingTimers) clearTimeout(timer);
      pendingTimers.clear();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      if (gitRoot) fs.rmSync(gitRoot, { recursive: true, force: true });
    },
  };
}

function matches(match: FaultMatch, method: string, path: string): boolean {
  if (match.method && match.method.toUpperCase() !== method.toUpperCase()) return false;
  if (match.path === undefined) return true;
  return typeof match.path === 'string' ? path.includes(match.path) : match.path.test(path);
}

function authKind(req: http.IncomingMessage): RequestRecord['auth'] {
  const query = new URL(req.url ?? '/', 'http://x').searchParams;
  if (query.get('token') || query.get('access_token')) return 'query';
  const scheme = (req.headers.authorization ?? '').trim().split(/\s+/)[0] ?? '';
  if (scheme === 'token') return 'token';
  if (scheme.toLowerCase() === 'bearer') return 'bearer';
  if (scheme.toLowerCase() === 'basic') return 'basic';
  return 'none';
}
