/**
 * The fake GitHub's repositories as git sees them: real bare repositories served over git's smart
 * HTTP with GitHub's authentication, and the REST endpoints that read them or build on them (a
 * branch, opening a pull request). Kept apart from app.ts so the API's other endpoints stay as
 * they are. Sources (docs.github.com):
 *
 * - git over HTTPS: "About remote repositories" (clone with HTTPS URLs, a personal access token as
 *   the password), "Authenticating as a GitHub App installation"
 *   (`https://x-access-token:TOKEN@github.com/owner/repo.git`), "Authorizing OAuth apps" (the
 *   token as the user name with the password `x-oauth-basic`); password authentication is not
 *   supported for git ("Token authentication requirements for Git operations"); a private or
 *   missing repository is `Repository not found.` (404), a push without write access 403
 *   `Permission to owner/repo.git denied to login.`;
 * - "REST API endpoints for branches", Get a branch: `{ name, commit: { sha, … }, protected }`,
 *   404 `Branch not found`;
 * - "REST API endpoints for pull requests", Create a pull request: `title`, `head`, `base`, `body`,
 *   `draft`; 201 with the pull request; 422 `Validation Failed` with `errors[]`: a head that does
 *   not exist (`field: head, code: invalid`), `No commits between <base> and <head>`, `A pull
 *   request already exists for <owner>:<head>.` (code `custom`).
 */
import fs from 'node:fs';
import type http from 'node:http';
import path from 'node:path';
import type { Context } from 'hono';
import { createBareRepo, git, type SeedRepoOptions } from '../agent/git-repos.js';
import { basicCredentials, gitPathParts, readBranch, runGitBackend } from '../gitea/git-http.js';
import type { createFakeGitHubApp } from './app.js';
import { atLeast, type FakeGitHubState, type IssueRecord, type RepoRecord, type UserRecord } from './state.js';

const DOCS = 'https://docs.github.com/rest';

/** Where repository `owner/name` lives on disk under `root`. */
export function gitHubRepoPath(root: string, owner: string, name: string): string {
  return path.join(root, owner.toLowerCase(), `${name.toLowerCase()}.git`);
}

/** Makes the repository's git side (a seeded bare repository whose HEAD is its default branch), once. */
export function seedGitHubRepo(root: string, repo: RepoRecord, seed: SeedRepoOptions = {}): string {
  const dir = gitHubRepoPath(root, repo.owner, repo.name);
  if (fs.existsSync(dir)) return dir;
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  createBareRepo(path.dirname(dir), repo.name.toLowerCase(), { develop: null, ...seed, defaultBranch: undefined });
  if (!readBranch(dir, repo.defaultBranch)) git(dir, 'branch', repo.defaultBranch, 'main');
  git(dir, 'symbolic-ref', 'HEAD', `refs/heads/${repo.defaultBranch}`);
  return dir;
}

/** The user of a git request's Basic credentials, as GitHub reads them: the token is the password, or the user name with `x-oauth-basic`. */
function gitUser(state: FakeGitHubState, authorization: string | undefined, repo: string): UserRecord | 'bad' | undefined {
  const credentials = basicCredentials(authorization);
  if (!credentials) return undefined;
  const token = credentials.password && credentials.password !== 'x-oauth-basic' ? credentials.password : credentials.user;
  const login = state.tokens.get(token);
  // An installation token reaches the repositories it was minted for, until it expires (apps.ts).
  const installation = state.installationTokens.get(token);
  if (installation && (installation.expiresAt <= state.now().getTime() || !installation.repos.has(repo.toLowerCase()))) return 'bad';
  return login ? state.user(login) : 'bad';
}

/** Serves one git request (`isGitPath` said yes) as github.com does. */
export function serveGitHubGit(state: FakeGitHubState, root: string, req: http.IncomingMessage, res: http.ServerResponse): void {
  const url = new URL(req.url ?? '/', 'http://fake');
  const { owner, name, rest } = gitPathParts(url.pathname)!;
  const text = (status: number, body: string, headers: Record<string, string> = {}) =>
    res.writeHead(status, { 'content-type': 'text/plain;charset=utf-8', ...headers }).end(body);
  const service = rest === 'info/refs' ? (url.searchParams.get('service') ?? '') : `git-${rest.slice(4)}`;
  if (!['git-upload-pack', 'git-receive-pack'].includes(service)) return void text(403, '');
  const pull = service === 'git-upload-pack';
  const repo = state.repo(owner, name);
  const dir = repo ? gitHubRepoPath(root, repo.owner, repo.name) : '';
  const exists = repo !== undefined && fs.existsSync(dir);
  const user = gitUser(state, req.headers.authorization, `${owner}/${name}`);
  const challenge = { 'www-authenticate': 'Basic realm="GitHub"' };
  if (user === 'bad') {
    return void text(401, 'Invalid username or token. Password authentication is not supported for Git operations.\n', challenge);
  }
  if (!(exists && !repo.private && pull) && !user) return void text(401, '', challenge);
  const permission = exists && user ? state.permissionOf(repo, user.login) : 'none';
  if (!exists || (repo.private && permission === 'none')) return void text(404, 'Repository not found.\n');
  if (!pull && !atLeast(permission, 'write')) {
    return void text(403, `Permission to ${repo.owner}/${repo.name}.git denied to ${user ? user.login : 'anonymous'}.\n`);
  }
  if (rest !== 'info/refs' && req.headers['content-type'] !== `application/x-${service}-request`) return void text(400, '');
  runGitBackend(
    { root, pathInfo: `/${repo.owner.toLowerCase()}/${repo.name.toLowerCase()}.git/${rest}`, remoteUser: user?.login },
    req,
    res,
  );
}

type Env = { Variables: { user: UserRecord | undefined } };

/** The REST endpoints over the git side: Get a branch, Create a pull request. */
export function addGitHubRepositoryRoutes(
  app: ReturnType<typeof createFakeGitHubApp>,
  state: FakeGitHubState,
  root: () => string,
  isProtected: (repo: RepoRecord, branch: string) => boolean = () => false,
): void {
  const fail = (c: Context, status: number, message: string, extra: Record<string, unknown> = {}) =>
    c.json({ message, documentation_url: DOCS, ...extra }, status as 400);
  const R = '/repos/:owner/:repo';
  const repoOf = (c: Context<Env>): RepoRecord | null => {
    const repo = state.repo(c.req.param('owner')!, c.req.param('repo')!);
    const caller = c.get('user');
    return repo && !(repo.private && (!caller || state.permissionOf(repo, caller.login) === 'none')) ? repo : null;
  };
  const headOf = (repo: RepoRecord, branch: string) => readBranch(gitHubRepoPath(root(), repo.owner, repo.name), branch);

  app.get(`${R}/branches/:branch{.+}`, (c) => {
    const repo = repoOf(c);
    if (!repo) return fail(c, 404, 'Not Found');
    const branch = c.req.param('branch');
    const head = headOf(repo, branch);
    if (!head) return fail(c, 404, 'Branch not found');
    const base = `${new URL(c.req.url).origin}/api/v3/repos/${repo.owner}/${repo.name}`;
    return c.json({
      name: branch,
      commit: { sha: head.id, commit: { message: head.message.trimEnd() }, url: `${base}/commits/${head.id}` },
      _links: { self: `${base}/branches/${branch}`, html: `${new URL(c.req.url).origin}/${repo.owner}/${repo.name}/tree/${branch}` },
      protected: isProtected(repo, branch),
      protection: {
        enabled: isProtected(repo, branch),
        required_status_checks: { enforcement_level: 'off', contexts: [], checks: [] },
      },
      protection_url: `${base}/branches/${branch}/protection`,
    });
  });

  // GitHub also names a repository by its id, `/repositories/{id}/…`, as its own Link headers do
  // on some lists: the same answers as by name.
  app.get('/repositories/:id{[0-9]+}/:rest{.*}?', async (c) => {
    const repo = [...state.repos.values()].find((r) => r.id === Number(c.req.param('id')));
    if (!repo) return fail(c, 404, 'Not Found');
    const rest = c.req.param('rest');
    const auth = c.req.header('authorization');
    return app.request(`/api/v3/repos/${repo.owner}/${repo.name}${rest ? `/${rest}` : ''}${new URL(c.req.url).search}`, {
      headers: auth ? { authorization: auth } : {},
    });
  });

  app.post(`${R}/pulls`, async (c) => {
    const caller = c.get('user');
    if (!caller) return fail(c, 401, 'Requires authentication');
    const repo = repoOf(c);
    if (!repo) return fail(c, 404, 'Not Found');
    const body = (await c.req.json().catch(() => ({}))) as { title?: string; head?: string; base?: string; body?: string; draft?: boolean };
    const invalid = (field: string, code = 'missing_field') =>
      fail(c, 422, 'Validation Failed', { errors: [{ resource: 'PullRequest', field, code }], status: '422' });
    const custom = (message: string) =>
      fail(c, 422, 'Validation Failed', { errors: [{ resource: 'PullRequest', code: 'custom', message }], status: '422' });
    if (!body.title) return invalid('title');
    if (!body.base) return invalid('base');
    if (!body.head) return invalid('head');
    // `owner:branch` names a head in this repository too.
    const headBranch = body.head.includes(':') ? body.head.slice(body.head.indexOf(':') + 1) : body.head;
    const head = headOf(repo, headBranch);
    if (!head) return invalid('head', 'invalid');
    const base = headOf(repo, body.base);
    if (!base) return invalid('base', 'invalid');
    if (head.id === base.id) return custom(`No commits between ${body.base} and ${headBranch}`);
    if (repo.issues.some((i) => i.pull && i.state === 'open' && i.pull.head === headBranch && i.pull.base === body.base))
      return custom(`A pull request already exists for ${repo.owner}:${headBranch}.`);
    const at = state.timestamp();
    const issue: IssueRecord = {
      id: state.id(),
      number: Math.max(0, ...repo.issues.map((i) => i.number)) + 1,
      title: body.title,
      body: body.body ?? '',
      state: 'open',
      author: caller.login,
      labels: [],
      createdAt: at,
      updatedAt: at,
      timeline: [],
      pull: { head: headBranch, base: body.base, sha: head.id, merged: false, draft: body.draft === true, reviews: [] },
    };
    repo.issues.push(issue);
    // The answer is the pull request as GET shows it.
    const shown = await app.request(`/api/v3/repos/${repo.owner}/${repo.name}/pulls/${issue.number}`, {
      headers: { authorization: c.req.header('authorization') ?? '' },
    });
    return c.json(await shown.json(), 201);
  });
}
