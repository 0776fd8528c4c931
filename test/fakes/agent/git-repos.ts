import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';

export interface SeedRepoOptions {
  /** Files committed on `main` (path → content). */
  main?: Record<string, string>;
  /** Files committed on `develop` on top of main; null = no develop branch. */
  develop?: Record<string, string> | null;
  /**
   * The repository's default branch (its HEAD), as whoever administers it on the forge chose it;
   * made a copy of main when it is another name. @default 'main'
   */
  defaultBranch?: string;
}

const GIT_ENV = {
  ...process.env,
  GIT_AUTHOR_NAME: 'Test',
  GIT_AUTHOR_EMAIL: 'test@example.invalid',
  GIT_COMMITTER_NAME: 'Test',
  GIT_COMMITTER_EMAIL: 'test@example.invalid',
  GIT_CONFIG_NOSYSTEM: '1',
};

export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, env: GIT_ENV, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

/**
 * A real bare repository on disk (`<root>/<name>.git`) with a seeded commit on `main` and, unless
 * `develop: null`, one more on `develop`. Its HEAD points at main, like a forge's default branch.
 */
export function createBareRepo(root: string, name: string, options: SeedRepoOptions = {}): string {
  const bare = path.join(root, `${name}.git`);
  const work = path.join(root, `${name}-seed`);
  git(root, 'init', '--quiet', '--bare', '--initial-branch=main', bare);
  git(root, 'init', '--quiet', '--initial-branch=main', work);
  writeFiles(work, { 'README.md': `# ${name}\n`, ...options.main });
  git(work, 'add', '-A');
  git(work, 'commit', '--quiet', '-m', 'seed main');
  git(work, 'remote', 'add', 'origin', bare);
  git(work, 'push', '--quiet', 'origin', 'main');
  if (options.develop !== null) {
    git(work, 'checkout', '--quiet', '-b', 'develop');
    writeFiles(work, { 'DEVELOP.md': 'work in progress\n', ...options.develop });
    git(work, 'add', '-A');
    git(work, 'commit', '--quiet', '-m', 'seed develop');
    git(work, 'push', '--quiet', 'origin', 'develop');
  }
  if (options.defaultBranch && options.defaultBranch !== 'main') {
    git(work, 'push', '--quiet', 'origin', `main:refs/heads/${options.defaultBranch}`);
    git(bare, 'symbolic-ref', 'HEAD', `refs/heads/${options.defaultBranch}`);
  }
  fs.rmSync(work, { recursive: true, force: true });
  return bare;
}

function writeFiles(dir: string, files: Record<string, string>) {
  for (const [file, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.writeFileSync(path.join(dir, file), content);
  }
}

export interface GitHttpServer {
  /** `http://127.0.0.1:<port>`; a repository `<root>/<owner>/<name>.git` is at `<url>/<owner>/<name>.git`. */
  readonly url: string;
  /** The Authorization header of every request, in order. */
  readonly authorizations: (string | undefined)[];
  /**
   * From now on every request answers `status` with a plain-text body, as a Gitea restarting
   * behind its proxy does (500, 502, 503); `null` ends the outage.
   */
  outage(status: number | null): void;
  /** Requests answered by the outage so far. */
  readonly refusedDuringOutage: number;
  close(): Promise<void>;
}

/**
 * Serves the bare repositories under `root` over git's smart HTTP protocol (the real
 * `git http-backend`), at the paths and with the answers of a Gitea forge
 * (go-gitea/gitea routers/web/repo/githttp.go `httpBase`): with `token` set the repositories are
 * private, and a request without that token (as Basic user or password, as Gitea accepts tokens)
 * gets 401 with `WWW-Authenticate: Basic realm="Gitea"` — also for a repository that does not
 * exist; an authenticated request for a missing repository gets 404 "Repository not found".
 */
export async function serveGitRepos(root: string, options: { token?: string } = {}): Promise<GitHttpServer> {
  const authorizations: (string | undefined)[] = [];
  let outage: number | null = null;
  let refusedDuringOutage = 0;
  const server = http.createServer((req, res) => {
    authorizations.push(req.headers.authorization);
    if (outage !== null) {
      refusedDuringOutage += 1;
      res.writeHead(outage, { 'content-type': 'text/plain' }).end(`${http.STATUS_CODES[outage] ?? 'Error'}\n`);
      return;
    }
    const url = new URL(req.url ?? '/', 'http://localhost');
    const match = /^\/([^/]+)\/([^/]+?)(?:\.git)?(\/.*)$/.exec(url.pathname);
    if (!match || match[1]!.startsWith('.') || match[2]!.startsWith('.')) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Not found\n');
      return;
    }
    const [, owner, name, rest] = match as unknown as [string, string, string, string];
    if (options.token && !hasToken(req.headers.authorization, options.token)) {
      res.writeHead(401, { 'www-authenticate': 'Basic realm="Gitea"', 'content-type': 'text/plain' }).end('Unauthorized\n');
      return;
    }
    if (!fs.existsSync(path.join(root, owner, `${name}.git`))) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Repository not found\n');
      return;
    }
    const backend = spawn('git', ['http-backend'], {
      env: {
        PATH: process.env.PATH,
        GIT_PROJECT_ROOT: root,
        GIT_HTTP_EXPORT_ALL: '1',
        GIT_CONFIG_NOSYSTEM: '1',
        REQUEST_METHOD: req.method,
        PATH_INFO: `/${owner}/${name}.git${rest}`,
        QUERY_STRING: url.search.slice(1),
        CONTENT_TYPE: req.headers['content-type'] ?? '',
        HTTP_CONTENT_ENCODING: req.headers['content-encoding'] ?? '',
        HTTP_GIT_PROTOCOL: (req.headers['git-protocol'] as string | undefined) ?? '',
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
      if (!headersDone) res.writeHead(500).end('git http-backend failed\n');
      else res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    authorizations,
    outage(status) {
      outage = status;
    },
    get refusedDuringOutage() {
      return refusedDuringOutage;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function hasToken(header: string | undefined, token: string): boolean {
  const match = /^Basic\s+(\S+)$/i.exec(header ?? '');
  if (!match) return false;
  const [user, password] = Buffer.from(match[1]!, 'base64').toString('utf8').split(':');
  return user === token || password === token;
}
