import fs from 'node:fs';
import path from 'node:path';
import { invalid, join, mapping, record, section, text, type ResolveContext } from '../config-schema/index.js';
import { hiddenPaths, isInside } from '../workspaces/index.js';
import { parseRepositoryName, REPOSITORY_NAME_RULE } from './names.js';
import type { DeclaredRepositories, DeclaredRepository } from './types.js';

interface Deps {
  dataDir: string;
  database: { url: string };
  configFile?: string;
  workspaceProvider: 'local' | 'coder';
}

const entry = mapping(
  {
    path: text({ doc: 'a local git repository, absolute or relative to baton.yaml (local workspaces only)' }),
    url: text({
      doc: 'a git URL (https://, http://, ssh://, git:// or user@host:path) without a password',
      check: (url) =>
        isGitUrl(url) ? undefined : invalid('must be an https://, http://, ssh:// or git:// URL, or user@host:path, without a password'),
    }),
  },
  {
    check: (v, key) =>
      (v.path === undefined) === (v.url === undefined) ? [`${key} needs exactly one of path (a local repository) or url (a git URL)`] : [],
  },
);

/**
 * `repositories:` in baton.yaml: repositories that are not on the forge, declared by the operator
 * so that runs can be submitted for them (`POST /api/runs`, `baton run`). A declared repository
 * is the only way baton ever clones from a local path or from a URL that is not the forge's: a
 * webhook or an API call names a repository, never where to clone it from. Runs of a declared
 * repository get no forge token and post no status comments: it is not on the forge.
 *
 * ```yaml
 * repositories:
 *   demo/hello: { path: ./hello }                                 # a local git repository (local workspaces only)
 *   tools/site: { url: "https://git.example.org/tools/site.git" } # any git URL a workspace can reach
 * ```
 */
export const repositoriesSection = section(
  record(entry, {
    doc: 'owner/repo to { path } or { url }: repositories that are not on the forge',
    key: (name) => (parseRepositoryName(name) ? undefined : invalid(REPOSITORY_NAME_RULE)),
  }),
  (v, ctx: ResolveContext<Deps>): DeclaredRepositories => {
    const { deps } = ctx;
    const base = deps.configFile ? path.dirname(deps.configFile) : process.cwd();
    const hidden = hiddenPaths(deps).map((h) => path.resolve(h));
    const declared: Record<string, DeclaredRepository> = {};
    for (const [name, given] of Object.entries(v)) {
      const parsed = parseRepositoryName(name);
      // A bad name, a bad URL or not exactly one of path and url has been reported already.
      if (!parsed || (given.path === undefined) === (given.url === undefined)) continue;
      const { owner, repo } = parsed;
      const key = join('repositories', name);
      if (given.url !== undefined) {
        declared[name.toLowerCase()] = { owner, repo, source: { kind: 'url', url: given.url } };
        continue;
      }
      const local = path.resolve(base, given.path!);
      // Checked now, not at the first run: a typo, or a path runs must never see, is refused at start.
      if (deps.workspaceProvider !== 'local') {
        ctx.problem(
          `${key}.path needs WORKSPACE_PROVIDER=local: a ${deps.workspaceProvider} workspace cannot reach ${local}; declare a url instead`,
        );
        continue;
      }
      if (!isGitRepository(local)) {
        ctx.problem(`${key}.path ${local} is not a git repository (no .git in it, and not a bare repository)`);
        continue;
      }
      const inside = hidden.find((h) => isInside(local, h));
      if (inside) {
        ctx.problem(`${key}.path ${local} is inside ${inside}, which runs must never see`);
        continue;
      }
      declared[name.toLowerCase()] = { owner, repo, source: { kind: 'path', path: local } };
    }
    return declared;
  },
);

/** The declared repository of that name, if any (case-insensitive, as forge names are). */
export function findDeclaredRepository(repositories: DeclaredRepositories, owner: string, repo: string): DeclaredRepository | undefined {
  return repositories[`${owner}/${repo}`.toLowerCase()];
}

/** What a workspace clones: the local path or the URL. */
export function cloneSourceOf(repository: DeclaredRepository): string {
  return repository.source.kind === 'path' ? repository.source.path : repository.source.url;
}

function isGitRepository(dir: string): boolean {
  const exists = (p: string) => {
    try {
      fs.statSync(p);
      return true;
    } catch {
      return false;
    }
  };
  // A working tree has .git; a bare repository has HEAD and objects/ itself.
  return exists(path.join(dir, '.git')) || (exists(path.join(dir, 'HEAD')) && exists(path.join(dir, 'objects')));
}

function isGitUrl(value: string): boolean {
  if (SCP_LIKE.test(value)) return true;
  try {
    const url = new URL(value);
    return URL_SCHEMES.includes(url.protocol) && url.hostname !== '' && url.password === '';
  } catch {
    return false;
  }
}

/** Git URL forms a declared repository may use; a password in one is refused (give git its credentials its own way). */
const URL_SCHEMES = ['https:', 'http:', 'ssh:', 'git:'];
/** `git@host:owner/repo.git`; the path may not start with `-` (it would read as an option to ssh). */
const SCP_LIKE = /^[A-Za-z0-9_.-]+@[A-Za-z0-9.-]+:[^/\s-]\S*$/;
