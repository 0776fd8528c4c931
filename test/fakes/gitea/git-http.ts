/**
 * Git's smart HTTP protocol on the fake Gitea, as routers/web/repo/githttp.go serves it: real
 * bare repositories under the fake's own directory, answered by the real `git http-backend` (CGI)
 * at `/<owner>/<repo>.git/info/refs`, `/git-upload-pack`, `/git-receive-pack` (the `.git` suffix
 * optional, as Gitea trims it). Authentication and answers follow `httpBase` (SOURCES.md).
 */
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import type http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { FakeGiteaState, RepoRecord, UserRecord } from './state.js';

/** The paths githttp.go routes (`/{username}/{reponame}/...`), only the smart protocol's. */
const GIT_PATH = /^\/([^/]+)\/([^/]+?)(?:\.git)?\/(info\/refs|git-upload-pack|git-receive-pack)$/;

export function isGitPath(pathname: string): boolean {
  return GIT_PATH.test(pathname);
}

/** Where repository `owner/name` lives on disk under `root`. */
export function bareRepoPath(root: string, owner: string, name: string): string {
  return path.join(root, owner.toLowerCase(), `${name.toLowerCase()}.git`);
}

/**
 * The token of a request as Gitea's web auth group reads it on git paths (services/auth): first
 * OAuth2's `parseToken` (`?token=`, `?access_token=`, `Authorization: token X` or `Bearer X`),
 * then Basic (`services/auth/basic.go`: the user name is the token when the password is empty or
 * `x-oauth-basic`, else the password is).
 */
export function presentedToken(authorization: string | undefined, query: URLSearchParams): { token: string; login?: string } | null {
  const fromQuery = query.get('token') || query.get('access_token');
  if (fromQuery) return { token: fromQuery };
  const header = (authorization ?? '').trim();
  const fields = header.split(/\s+/);
  if (fields.length === 2 && (fields[0] === 'token' || fields[0]!.toLowerCase() === 'bearer')) return { token: fields[1]! };
  const basic = /^basic\s+(\S+)$/i.exec(header);
  if (!basic) return null;
  const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  const [name, password] = colon < 0 ? [decoded, ''] : [decoded.slice(0, colon), decoded.slice(colon + 1)];
  if (password === '' || password === 'x-oauth-basic') return { token: name };
  return { token: password, login: name };
}

export interface GitHttpOptions {
  state: FakeGiteaState;
  /** The directory holding the bare repositories, `<owner>/<name>.git`. */
  root: () => string;
  /** The user a token belongs to, or undefined. */
  userOf: (token: string) => UserRecord | undefined;
}

/** Serves one git request (`isGitPath` said yes). */
export function serveGit(options: GitHttpOptions, req: http.IncomingMessage, res: http.ServerResponse): void {
  const url = new URL(req.url ?? '/', 'http://fake');
  const [, owner, name, rest] = GIT_PATH.exec(url.pathname) as unknown as [string, string, string, string];
  const text = (status: number, body: string, headers: Record<string, string> = {}) =>
    res.writeHead(status, { 'content-type': 'text/plain;charset=utf-8', ...headers }).end(body);

  // httpBase: the service decides the access mode; an unknown one is a 400.
  const service = rest === 'info/refs' ? (url.searchParams.get('service') ?? '') : `git-${rest.slice(4)}`;
  if (!['git-upload-pack', 'git-receive-pack'].includes(service)) return void text(400, '');
  const pull = service === 'git-upload-pack';

  const repo: RepoRecord | undefined = options.state.repo(owner, name);
  const onDisk = repo ? fs.existsSync(bareRepoPath(options.root(), repo.owner, repo.name)) : false;
  const exists = repo !== undefined && onDisk;
  if (exists && repo.archived && !pull) {
    return void text(403, 'This repo is archived. You can view files and clone it, but cannot push or open issues/pull-requests.');
  }
  // Only a public pull needs no sign-in; everything else asks for it, a missing repository too.
  const publicPull = exists && !repo.private && pull;
  const presented = presentedToken(req.headers.authorization, url.searchParams);
  let user = presented ? options.userOf(presented.token) : undefined;
  if (user && presented?.login !== undefined && presented.login.toLowerCase() !== user.login.toLowerCase()) user = undefined;
  if (!publicPull) {
    // OAuth2 on (Gitea's default): the realm tells Git Credential Manager to use Gitea's OAuth2 app.
    if (!user) return void text(401, 'Unauthorized\n', { 'www-authenticate': 'Basic realm="Gitea"' });
    if (!exists) return void text(404, 'Repository not found');
    const permission = options.state.permission(user, repo);
    const enough = pull ? permission !== 'none' : permission === 'write' || permission === 'admin';
    if (!enough) return void text(404, 'Repository not found');
  }
  if (!exists) return void text(404, 'Repository not found');
  // serviceRPC: the request body must be the service's request type.
  if (rest !== 'info/refs' && req.headers['content-type'] !== `application/x-${service}-request`) return void text(400, '');

  runGitBackend(
    { root: options.root(), pathInfo: `/${repo.owner.toLowerCase()}/${repo.name.toLowerCase()}.git/${rest}`, remoteUser: user?.login },
    req,
    res,
  );
}

/**
 * One request of git's smart HTTP answered by the real `git http-backend` (CGI) on a bare
 * repository under `root` (`pathInfo`: `/<owner>/<name>.git/<info/refs|git-upload-pack|
 * git-receive-pack>`), once the forge's own checks have passed. Shared by the fake forges: each
 * decides who may do what as its forge does, then lets git answer.
 */
export function runGitBackend(
  options: { root: string; pathInfo: string; remoteUser?: string },
  req: http.IncomingMessage,
  res: http.ServerResponse,
): void {
  const url = new URL(req.url ?? '/', 'http://fake');
  const text = (status: number, body: string) => res.writeHead(status, { 'content-type': 'text/plain;charset=utf-8' }).end(body);
  const backend = spawn('git', ['http-backend'], {
    env: {
      PATH: process.env.PATH,
      GIT_PROJECT_ROOT: options.root,
      GIT_HTTP_EXPORT_ALL: '1',
      GIT_CONFIG_NOSYSTEM: '1',
      HOME: options.root,
      REQUEST_METHOD: req.method,
      PATH_INFO: options.pathInfo,
      QUERY_STRING: url.search.slice(1),
      CONTENT_TYPE: req.headers['content-type'] ?? '',
      HTTP_CONTENT_ENCODING: req.headers['content-encoding'] ?? '',
      HTTP_GIT_PROTOCOL: (req.headers['git-protocol'] as string | undefined) ?? '',
      // git http-backend serves receive-pack only to an authenticated user.
      ...(options.remoteUser ? { REMOTE_USER: options.remoteUser } : {}),
      REMOTE_ADDR: '127.0.0.1',
    },
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  req.pipe(backend.stdin);
  backend.stdin.on('error', () => {});
  // CGI: header lines, an empty line, then the body.
  let head = Buffer.alloc(0);
  let headersDone = false;
  backend.stdout.on('data', (chunk: Buffer) => {
    if (headersDone) return void res.write(chunk);
    head = Buffer.concat([head, chunk]);
    const end = head.indexOf('\r\n\r\n');
    if (end === -1) return;
    headersDone = true;
    let status = 200;
    const headers: Record<string, string> = {};
    for (const line of head.subarray(0, end).toString('latin1').split('\r\n')) {
      const colon = line.indexOf(':');
      const key = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      if (key === 'status') status = Number(value.split(' ')[0]);
      else headers[key] = value;
    }
    res.writeHead(status, headers);
    res.write(head.subarray(end + 4));
  });
  backend.on('close', () => {
    if (!headersDone) text(500, 'git http-backend failed\n');
    else res.end();
  });
}

/** The parts of a smart-HTTP path (`isGitPath` said yes): owner, name (without `.git`), and what is asked. */
export function gitPathParts(pathname: string): { owner: string; name: string; rest: string } | null {
  const match = GIT_PATH.exec(pathname);
  return match ? { owner: match[1]!, name: match[2]!, rest: match[3]! } : null;
}

/** The user and password of a Basic `Authorization`, or null for another scheme or none. */
export function basicCredentials(authorization: string | undefined): { user: string; password: string } | null {
  const basic = /^basic\s+(\S+)$/i.exec((authorization ?? '').trim());
  if (!basic) return null;
  const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 0 ? { user: decoded, password: '' } : { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/** A branch of a repository on disk: its head commit, or null when there is no such branch. */
export function readBranch(bare: string, branch: string): { id: string; message: string; timestamp: string } | null {
  if (!fs.existsSync(bare) || !/^[^\0\s~^:?*[\\]+$/.test(branch)) return null;
  try {
    const out = execFileSync('git', ['log', '-1', '--format=%H%x00%cI%x00%B', `refs/heads/${branch}`, '--'], {
      cwd: bare,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      env: { PATH: process.env.PATH, GIT_CONFIG_NOSYSTEM: '1', HOME: bare },
    });
    const [id, timestamp, message] = out.split('\0') as [string, string, string];
    return { id, message: message.trimEnd() + '\n', timestamp };
  } catch {
    return null;
  }
}

/** A fresh directory for a fake's repositories, removed by the fake's close(). */
export function makeGitRoot(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'fake-gitea-git-'));
}
