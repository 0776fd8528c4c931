/**
 * A fake GitHub (Enterprise Server layout: the API under `/api/v3`) for tests: a real HTTP server
 * on 127.0.0.1, port 0, answering the REST endpoints baton uses as GitHub does (SOURCES.md), plus
 * a programmatic side to seed data, read back what was posted and make the API fail.
 */
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { getRequestListener } from '@hono/node-server';
import type { Context } from 'hono';
import fs from 'node:fs';
import type { SeedRepoOptions } from '../agent/git-repos.js';
import { isGitPath, makeGitRoot } from '../gitea/git-http.js';
import { createFakeGitHubApp } from './app.js';
import { createApp, installApp } from './apps.js';
import { addGitHubRepositoryRoutes, seedGitHubRepo, serveGitHubGit } from './repository.js';
import { FakeGitHubState, type GitHubPermission, type HookRecord, type IssueRecord, type RepoRecord, type ReviewRecord } from './state.js';

export type { GitHubPermission } from './state.js';

export interface FakeGitHub {
  /** Root URL, as `GITHUB_URL` of an Enterprise Server would be (the API is `<url>/api/v3`). */
  readonly url: string;
  readonly apiUrl: string;
  readonly state: FakeGitHubState;
  /** Every API request, oldest first (`METHOD /path`, no query). */
  readonly requests: readonly string[];
  addUser(login: string, options?: { token?: string; type?: 'User' | 'Bot' }): { id: number; login: string; token: string };
  addRepo(owner: string, name: string, options?: { private?: boolean }): void;
  /** Registers a GitHub App (its bot user `<slug>[bot]` too); `privateKey` is the PEM GitHub would hand out. */
  addApp(slug: string, options?: { owner?: string; events?: string[] }): { id: number; slug: string; login: string; privateKey: string };
  /** Installs the App on `owner`'s `repos` (its bot gets write access there); returns the installation id. */
  installApp(appId: number, owner: string, repos: string[]): number;
  /** The repositories (`owner/name`, lower case) each installation token minted so far reaches, and what was asked, oldest first. */
  mintedTokens(): { repos: string[]; repositoriesAsked: string[] | undefined }[];
  setPermission(owner: string, repo: string, login: string, permission: GitHubPermission): void;
  addLabel(owner: string, repo: string, name: string, color?: string): number;
  addIssue(owner: string, repo: string, options: { title: string; author: string; labels?: string[]; number?: number }): number;
  addPullRequest(owner: string, repo: string, options: { title: string; author: string; head: string; base: string; sha?: string }): number;
  /** Submits a review as `author` would in the web UI (it moves the pull request's updated_at), sending no webhook; returns its id. */
  addReview(owner: string, repo: string, number: number, author: string, state: ReviewRecord['state'], body?: string): number;
  /** Writes a comment as `author` would in the web UI (it moves the issue's updated_at), sending no webhook. */
  addComment(owner: string, repo: string, number: number, author: string, body: string): { id: number; createdAt: string };
  /** Adds a label to an issue as `actor` would through the web UI (timeline entry, updated_at), sending no webhook. */
  labelIssue(owner: string, repo: string, number: number, label: string, actor: string): void;
  issue(owner: string, repo: string, number: number): IssueRecord | undefined;
  comments(owner: string, repo: string, number: number): { id: number; author: string; body: string }[];
  /** The reactions on a comment (`POST …/issues/comments/{id}/reactions`), oldest first. */
  reactions(owner: string, repo: string, commentId: number): { user: string; content: string }[];
  hooks(owner: string, repo: string): HookRecord[];
  /** The next `count` requests matching `path` (a substring) answer `status` with GitHub's error body. */
  failNext(path: string, status: number, count?: number): void;
  /**
   * Gives the repository its git side (a bare repository seeded with `main`, its HEAD the default
   * branch), served over smart HTTP at `<url>/<owner>/<repo>.git` with GitHub's authentication;
   * returns its directory. Idempotent.
   */
  gitRepo(owner: string, repo: string, seed?: SeedRepoOptions): string;
  /** Makes `branch` a protected branch (Get a branch then says `protected: true`); pushes to it are not refused by the fake itself. */
  protectBranch(owner: string, repo: string, branch: string): void;
  close(): Promise<void>;
}

export async function createFakeGitHub(options: { now?: () => Date } = {}): Promise<FakeGitHub> {
  const state = new FakeGitHubState(options.now);
  const requests: string[] = [];
  const faults: { path: string; status: number; remaining: number }[] = [];
  const onRequest = (c: Context): Response | undefined => {
    const path = new URL(c.req.url).pathname;
    requests.push(`${c.req.method} ${path}`);
    const fault = faults.find((f) => f.remaining > 0 && path.includes(f.path));
    if (!fault) return undefined;
    fault.remaining -= 1;
    return c.json(
      { message: fault.status >= 500 ? 'Server Error' : 'fault', documentation_url: 'https://docs.github.com/rest' },
      fault.status as 500,
    );
  };
  const app = createFakeGitHubApp(state, { onRequest });
  let gitRoot: string | null = null;
  const gitRootDir = () => (gitRoot ??= makeGitRoot());
  const protectedBranches = new Set<string>();
  const branchKey = (owner: string, repo: string, branch: string) => `${owner}/${repo}`.toLowerCase() + `:${branch}`;
  addGitHubRepositoryRoutes(app, state, gitRootDir, (repo, branch) => protectedBranches.has(branchKey(repo.owner, repo.name, branch)));
  const listener = getRequestListener(app.fetch);
  // Git's smart HTTP is github.com's web side, not the API: it has its own handler.
  const server = http.createServer((req, res) => {
    const pathname = new URL(req.url ?? '/', 'http://x').pathname;
    if (!isGitPath(pathname)) return void listener(req, res);
    requests.push(`${req.method} ${pathname}`);
    serveGitHubGit(state, gitRootDir(), req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const repoOf = (owner: string, repo: string): RepoRecord => {
    const found = state.repo(owner, repo);
    if (!found) throw new Error(`fake GitHub: no repository ${owner}/${repo}`);
    return found;
  };
  const labelId = (repo: RepoRecord, name: string) => {
    const found = repo.labels.find((l) => l.name.toLowerCase() === name.toLowerCase());
    if (!found) throw new Error(`fake GitHub: no label ${name} in ${repo.owner}/${repo.name}`);
    return found.id;
  };
  const newIssue = (repo: RepoRecord, options: { title: string; author: string; labels?: string[]; number?: number }): IssueRecord => {
    const at = state.timestamp();
    const number = options.number ?? Math.max(0, ...repo.issues.map((i) => i.number)) + 1;
    const issue: IssueRecord = {
      id: state.id(),
      number,
      title: options.title,
      body: '',
      state: 'open',
      author: options.author,
      labels: (options.labels ?? []).map((l) => labelId(repo, l)),
      createdAt: at,
      updatedAt: at,
      timeline: [],
    };
    repo.issues.push(issue);
    return issue;
  };

  return {
    url,
    apiUrl: `${url}/api/v3`,
    state,
    requests,
    addUser(login, opts = {}) {
      const id = state.id();
      state.users.set(login.toLowerCase(), { id, login, name: login, siteAdmin: false, type: opts.type ?? 'User' });
      const token = opts.token ?? `ghp_${crypto.randomBytes(18).toString('hex')}`;
      state.tokens.set(token, login);
      return { id, login, token };
    },
    addRepo(owner, name, opts = {}) {
      state.repos.set(`${owner}/${name}`.toLowerCase(), {
        id: state.id(),
        owner,
        name,
        private: opts.private ?? false,
        archived: false,
        defaultBranch: 'main',
        labels: [],
        issues: [],
        comments: [],
        hooks: [],
        collaborators: new Map(),
      });
    },
    addApp(slug, opts = {}) {
      const app = createApp(state, { slug, owner: opts.owner ?? 'app-owner', events: opts.events });
      return { id: app.id, slug: app.slug, login: `${app.slug}[bot]`, privateKey: app.privateKey };
    },
    installApp(appId, owner, repos) {
      const app = state.apps.get(appId);
      if (!app) throw new Error(`fake GitHub: no App ${appId}`);
      return installApp(state, app, owner, repos).id;
    },
    mintedTokens() {
      return [...state.installationTokens.values()].map((t) => ({ repos: [...t.repos], repositoriesAsked: t.repositoriesAsked }));
    },
    setPermission(owner, repo, login, permission) {
      repoOf(owner, repo).collaborators.set(login.toLowerCase(), permission);
    },
    addLabel(owner, repo, name, color = 'ededed') {
      const record = { id: state.id(), name, color, description: '' };
      repoOf(owner, repo).labels.push(record);
      return record.id;
    },
    addIssue(owner, repo, opts) {
      return newIssue(repoOf(owner, repo), opts).number;
    },
    addPullRequest(owner, repo, opts) {
      const issue = newIssue(repoOf(owner, repo), opts);
      issue.pull = {
        head: opts.head,
        base: opts.base,
        sha: opts.sha ?? crypto.randomBytes(20).toString('hex'),
        merged: false,
        draft: false,
        reviews: [],
      };
      return issue.number;
    },
    addReview(owner, repo, number, author, reviewState, body = '') {
      const issue = repoOf(owner, repo).issues.find((i) => i.number === number);
      if (!issue?.pull) throw new Error(`fake GitHub: #${number} is not a pull request`);
      const id = state.id();
      issue.pull.reviews.push({ id, author, state: reviewState, body, commitId: issue.pull.sha, submittedAt: state.timestamp() });
      if (reviewState !== 'PENDING') issue.updatedAt = state.timestamp();
      return id;
    },
    addComment(owner, repo, number, author, body) {
      const record = repoOf(owner, repo);
      const issue = record.issues.find((i) => i.number === number);
      if (!issue) throw new Error(`fake GitHub: no issue #${number}`);
      const at = state.timestamp();
      const comment = { id: state.id(), issue: number, author, body, createdAt: at, updatedAt: at };
      record.comments.push(comment);
      issue.updatedAt = at;
      return { id: comment.id, createdAt: at };
    },
    labelIssue(owner, repo, number, label, actor) {
      const record = repoOf(owner, repo);
      const issue = record.issues.find((i) => i.number === number);
      if (!issue) throw new Error(`fake GitHub: no issue #${number}`);
      const id = labelId(record, label);
      if (!issue.labels.includes(id)) issue.labels.push(id);
      issue.timeline.push({ id: state.id(), event: 'labeled', actor, label, createdAt: state.timestamp() });
      issue.updatedAt = state.timestamp();
    },
    issue(owner, repo, number) {
      return state.repo(owner, repo)?.issues.find((i) => i.number === number);
    },
    comments(owner, repo, number) {
      return (state.repo(owner, repo)?.comments ?? [])
        .filter((c) => c.issue === number)
        .map((c) => ({ id: c.id, author: c.author, body: c.body }));
    },
    reactions(owner, repo, commentId) {
      const comment = repoOf(owner, repo).comments.find((c) => c.id === commentId);
      return (comment?.reactions ?? []).map((r) => ({ user: r.user, content: r.content }));
    },
    hooks(owner, repo) {
      return repoOf(owner, repo).hooks;
    },
    failNext(path, status, count = 1) {
      faults.push({ path, status, remaining: count });
    },
    gitRepo(owner, repo, seed) {
      return seedGitHubRepo(gitRootDir(), repoOf(owner, repo), seed);
    },
    protectBranch(owner, repo, branch) {
      const record = repoOf(owner, repo);
      protectedBranches.add(branchKey(record.owner, record.name, branch));
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
