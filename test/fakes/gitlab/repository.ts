/**
 * The fake GitLab's projects as git sees them: real bare repositories served over git's smart HTTP
 * with GitLab's authentication, and the REST endpoints that read them or build on them (a branch,
 * opening a merge request). Kept apart from app.ts so the API's other endpoints stay as they are.
 * Sources:
 *
 * - git over HTTPS takes Basic credentials: a personal, project or group access token as the
 *   password with any user name (gitlab-org/gitlab#212953: "Any login is accepted with personal
 *   access token"), an OAuth token only with the user name `oauth2` (docs.gitlab.com, "OAuth 2.0
 *   identity provider API", access Git over HTTPS with the access token; gitlab-org/gitlab#349461);
 *   wrong credentials are 401 `HTTP Basic: Access denied`; a project the user may not see is 404,
 *   a push below Developer 403 `You are not allowed to push code to this project.`;
 * - "Branches API", Get a single repository branch: `{ name, commit, merged, protected, default,
 *   developers_can_push, developers_can_merge, can_push, web_url }`, 404 `404 Branch Not Found`;
 * - "Merge requests API", Create MR: `source_branch`, `target_branch`, `title` required
 *   (`400 { error: "title is missing" }` otherwise), `description`, `draft`; 201 with the merge
 *   request; a branch problem is 409 with `message` a list (lib/api/helpers/merge_requests_helpers.rb,
 *   `handle_merge_request_errors!`: `conflict!(errors[:validate_branches])`): `Another open merge
 *   request already exists for this source branch: !N`, `You can't use same project/branch for
 *   source and target`, `Source branch "x" does not exist`.
 */
import fs from 'node:fs';
import type http from 'node:http';
import path from 'node:path';
import type { Context } from 'hono';
import { createBareRepo, git, type SeedRepoOptions } from '../agent/git-repos.js';
import { basicCredentials, readBranch, runGitBackend } from '../gitea/git-http.js';
import type { createFakeGitLabApp } from './app.js';
import type { FakeGitLabState, ItemRecord, ProjectRecord, UserRecord } from './state.js';

/**
 * GitLab's smart-HTTP paths, `/<namespace>/<project>[.git]/…` with the namespace as many segments
 * deep as its subgroups (lib/gitlab/path_regex.rb `full_project_git_path_regex`).
 */
const GIT_PATH = /^\/((?:[^/]+\/)*[^/]+)\/([^/]+?)(?:\.git)?\/(info\/refs|git-upload-pack|git-receive-pack)$/;

export function isGitLabGitPath(pathname: string): boolean {
  return GIT_PATH.test(pathname);
}

/** The parts of a smart-HTTP path (`isGitLabGitPath` said yes): namespace, project (without `.git`) and what is asked. */
function gitLabGitPathParts(pathname: string): { owner: string; name: string; rest: string } {
  const match = GIT_PATH.exec(pathname)!;
  return { owner: match[1]!, name: match[2]!, rest: match[3]! };
}

/** Where project `namespace/path` lives on disk under `root`. */
export function gitLabRepoPath(root: string, namespace: string, project: string): string {
  return path.join(root, namespace.toLowerCase(), `${project.toLowerCase()}.git`);
}

/** Makes the project's repository (a seeded bare repository whose HEAD is its default branch), once. */
export function seedGitLabRepo(root: string, project: ProjectRecord, seed: SeedRepoOptions = {}): string {
  const dir = gitLabRepoPath(root, project.namespace, project.path);
  if (fs.existsSync(dir)) return dir;
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  createBareRepo(path.dirname(dir), project.path.toLowerCase(), { develop: null, ...seed, defaultBranch: undefined });
  if (!readBranch(dir, project.defaultBranch)) git(dir, 'branch', project.defaultBranch, 'main');
  git(dir, 'symbolic-ref', 'HEAD', `refs/heads/${project.defaultBranch}`);
  return dir;
}

/** Serves one git request (`isGitLabGitPath` said yes) as GitLab does. */
export function serveGitLabGit(state: FakeGitLabState, root: string, req: http.IncomingMessage, res: http.ServerResponse): void {
  const url = new URL(req.url ?? '/', 'http://fake');
  const { owner, name, rest } = gitLabGitPathParts(url.pathname);
  const text = (status: number, body: string, headers: Record<string, string> = {}) =>
    res.writeHead(status, { 'content-type': 'text/plain;charset=utf-8', ...headers }).end(body);
  const service = rest === 'info/refs' ? (url.searchParams.get('service') ?? '') : `git-${rest.slice(4)}`;
  if (!['git-upload-pack', 'git-receive-pack'].includes(service)) return void text(403, '');
  const pull = service === 'git-upload-pack';
  const project = state.project(`${owner}/${name}`);
  const dir = project ? gitLabRepoPath(root, project.namespace, project.path) : '';
  const exists = project !== undefined && fs.existsSync(dir);
  const credentials = basicCredentials(req.headers.authorization);
  const challenge = { 'www-authenticate': 'Basic realm="GitLab"' };
  let user: UserRecord | undefined;
  if (credentials) {
    const username = credentials.user ? state.tokens.get(credentials.password) : undefined;
    user = username ? state.user(username) : undefined;
    if (!user) return void text(401, 'HTTP Basic: Access denied\n', challenge);
  }
  if (!(exists && project.visibility === 'public' && pull) && !user) return void text(401, 'HTTP Basic: Access denied\n', challenge);
  const level = exists && user ? state.accessOf(project, user.username) : 0;
  const visible = exists && (project.visibility === 'public' || (project.visibility === 'internal' && user) || level >= 10);
  if (!visible) return void text(404, "The project you were looking for could not be found or you don't have permission to view it.\n");
  if (!pull && level < 30) return void text(403, 'You are not allowed to push code to this project.\n');
  if (rest !== 'info/refs' && req.headers['content-type'] !== `application/x-${service}-request`) return void text(400, '');
  runGitBackend(
    { root, pathInfo: `/${project.namespace.toLowerCase()}/${project.path.toLowerCase()}.git/${rest}`, remoteUser: user?.username },
    req,
    res,
  );
}

type Env = { Variables: { user: UserRecord | undefined } };

/** The REST endpoints over the git side: Get a single repository branch, Create MR. */
export function addGitLabRepositoryRoutes(
  app: ReturnType<typeof createFakeGitLabApp>,
  state: FakeGitLabState,
  root: () => string,
  isProtected: (project: ProjectRecord, branch: string) => boolean = () => false,
): void {
  const P = '/projects/:id';
  const projectOf = (c: Context<Env>): ProjectRecord | null => {
    const id = decodeURIComponent(c.req.param('id') ?? '');
    const project = /^\d+$/.test(id) ? [...state.projects.values()].find((p) => p.id === Number(id)) : state.project(id);
    const caller = c.get('user');
    const level = project && caller ? state.accessOf(project, caller.username) : 0;
    const visible = project && (project.visibility === 'public' || (project.visibility === 'internal' && caller) || level >= 10);
    return visible ? project : null;
  };
  const headOf = (p: ProjectRecord, branch: string) => readBranch(gitLabRepoPath(root(), p.namespace, p.path), branch);

  app.get(`${P}/repository/branches/:branch`, (c) => {
    const p = projectOf(c);
    if (!p) return c.json({ message: '404 Project Not Found' }, 404);
    const branch = c.req.param('branch');
    const head = headOf(p, branch);
    if (!head) return c.json({ message: '404 Branch Not Found' }, 404);
    const caller = c.get('user');
    const level = caller ? state.accessOf(p, caller.username) : 0;
    return c.json({
      name: branch,
      merged: false,
      protected: isProtected(p, branch),
      default: branch === p.defaultBranch,
      developers_can_push: false,
      developers_can_merge: false,
      can_push: level >= 30,
      web_url: `${new URL(c.req.url).origin}/${p.namespace}/${p.path}/-/tree/${branch}`,
      commit: {
        id: head.id,
        short_id: head.id.slice(0, 8),
        title: head.message.split('\n')[0],
        message: head.message,
        committed_date: head.timestamp,
      },
    });
  });

  app.post(`${P}/merge_requests`, async (c) => {
    const caller = c.get('user');
    if (!caller) return c.json({ message: '401 Unauthorized' }, 401);
    const p = projectOf(c);
    if (!p) return c.json({ message: '404 Project Not Found' }, 404);
    if (state.accessOf(p, caller.username) < 30) return c.json({ message: '403 Forbidden' }, 403);
    const body = (await c.req.json().catch(() => ({}))) as {
      source_branch?: string;
      target_branch?: string;
      title?: string;
      description?: string;
      draft?: boolean;
    };
    const missing = (['source_branch', 'target_branch', 'title'] as const).filter((k) => !body[k]);
    if (missing.length) return c.json({ error: missing.map((k) => `${k} is missing`).join(', ') }, 400);
    const conflict = (message: string) => c.json({ message: [message] }, 409);
    const source = headOf(p, body.source_branch!);
    if (!source) return conflict(`Source branch "${body.source_branch}" does not exist`);
    if (!headOf(p, body.target_branch!)) return conflict(`Target branch "${body.target_branch}" does not exist`);
    if (body.source_branch === body.target_branch) return conflict("You can't use same project/branch for source and target");
    const open = p.mergeRequests.find(
      (m) => m.state === 'opened' && m.mr?.source === body.source_branch && m.mr?.target === body.target_branch,
    );
    if (open) return conflict(`Another open merge request already exists for this source branch: !${open.iid}`);
    const at = state.timestamp();
    const item: ItemRecord = {
      id: state.id(),
      iid: Math.max(0, ...p.mergeRequests.map((m) => m.iid)) + 1,
      title: body.title!,
      description: body.description ?? '',
      state: 'opened',
      author: caller.username,
      labels: [],
      createdAt: at,
      updatedAt: at,
      notes: [],
      labelEvents: [],
      mr: {
        source: body.source_branch!,
        target: body.target_branch!,
        sha: source.id,
        approvedBy: [],
        reviewers: [],
        draft: body.draft === true,
        versions: [{ id: state.id(), headSha: source.id, createdAt: at }],
      },
    };
    p.mergeRequests.push(item);
    // The answer is the merge request as GET shows it.
    const auth = Object.fromEntries(
      (['private-token', 'authorization'] as const).flatMap((name) => (c.req.header(name) ? [[name, c.req.header(name)!]] : [])),
    );
    const shown = await app.request(`/api/v4/projects/${p.id}/merge_requests/${item.iid}`, { headers: auth });
    return c.json(await shown.json(), 201);
  });
}
