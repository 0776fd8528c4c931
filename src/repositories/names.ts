/**
 * Repository names as the forge accepts them: `owner/repo`, each part letters, digits, `-`, `_`
 * and `.`, starting with a letter or digit (Gitea's `IsValidUsername` and repository name rules,
 * simplified). Names that pass are safe in a URL path, a workspace name and a log line; they are
 * never a path or a command-line option.
 */
const PART = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/;

export interface RepositoryName {
  owner: string;
  repo: string;
}

/** `owner/repo` → its parts, or null when it is not a valid repository name. */
export function parseRepositoryName(text: string): RepositoryName | null {
  const parts = text.split('/');
  if (parts.length !== 2) return null;
  const [owner, repo] = parts as [string, string];
  if (!isNamePart(owner) || !isNamePart(repo) || /\.git$/i.test(repo)) return null;
  return { owner, repo };
}

export function isNamePart(part: string): boolean {
  return PART.test(part) && !part.includes('..');
}

/**
 * An owner or repository name as Gitea allows it, for names that arrive from the forge (a webhook
 * payload, an API run of a forge repository): ASCII letters, digits, `_`, `.` and `-`, and not
 * `.` or `..`. Gitea's own rule (go-gitea/gitea models/repo/repo.go `IsUsableRepoName`:
 * `[-.\w]+`, reserved `.`, `..`, `-`) is the model. Such a name is one URL path segment that no
 * URL parser resolves away, so `<GITEA_URL>/<owner>/<repo>.git` stays on the forge.
 */
export function isForgeName(name: string): boolean {
  return /^[A-Za-z0-9_.-]{1,255}$/.test(name) && name !== '.' && name !== '..';
}

export const FORGE_NAME_RULE = 'only letters, digits, "_", "." and "-" are allowed, and not "." or ".."';

/**
 * GitLab's path rules, which baton applies to a project path (`namespace/project`, the namespace
 * a user, a group or a group's subgroups: `acme/platform/app`) wherever one arrives, a webhook
 * payload included (gitlab-org/gitlab lib/gitlab/path_regex.rb `PATH_REGEX_STR`,
 * `NAMESPACE_FORMAT_REGEX`, `PROJECT_PATH_FORMAT_REGEX`; app/models/namespace.rb
 * `URL_MAX_LENGTH = 255`, `NUMBER_OF_ANCESTORS_ALLOWED = 20`; src/forge/gitlab/SOURCES.md).
 * Each segment is letters, digits, `_`, `-` and `.`, at most 255 characters, starts with a letter,
 * a digit or `_` (GitLab also lets a legacy path start with `.`: baton does not, so no segment is
 * ever `.`, `..` or hidden), and does not end in `.git` or `.atom`; a namespace segment does not
 * end in `.` either. A namespace has at most 21 segments: a top-level group and 20 levels of
 * subgroups. Such a path is safe in a URL path (its slashes are the only separators), a
 * workspace name and a log line, and is never a path or a command-line option.
 */
const GITLAB_SEGMENT = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,254}$/;

/** The most segments a GitLab namespace has: a top-level group and its 20 levels of subgroups. */
export const GITLAB_NAMESPACE_MAX_DEPTH = 21;

export const GITLAB_SEGMENT_RULE =
  'each segment letters, digits, "_", "-" and ".", starting with a letter, a digit or "_", not ending in ".git" or ".atom"';

/** What is wrong with one segment of a GitLab path, or undefined when GitLab could have made it. */
function gitLabSegmentProblem(segment: string, kind: 'namespace' | 'project'): string | undefined {
  if (segment === '') return 'has an empty segment';
  const shown = JSON.stringify(segment.slice(0, 60));
  if (!GITLAB_SEGMENT.test(segment)) return `has a segment ${shown} that is not a GitLab path (${GITLAB_SEGMENT_RULE})`;
  if (/\.(git|atom)$/i.test(segment)) return `has a segment ${shown} ending in ".git" or ".atom"`;
  if (kind === 'namespace' && segment.endsWith('.')) return `has a namespace segment ${shown} ending in "."`;
  return undefined;
}

/**
 * What is wrong with a GitLab namespace (`acme`, `acme/platform`, …), or undefined when it is
 * one GitLab could have made.
 */
export function gitLabNamespaceProblem(namespace: string): string | undefined {
  const segments = namespace.split('/');
  if (segments.length > GITLAB_NAMESPACE_MAX_DEPTH)
    return `has ${segments.length} segments: a GitLab namespace has at most ${GITLAB_NAMESPACE_MAX_DEPTH} (a group and 20 levels of subgroups)`;
  for (const segment of segments) {
    const problem = gitLabSegmentProblem(segment, 'namespace');
    if (problem) return problem;
  }
  return undefined;
}

/** What is wrong with a GitLab project path (`namespace/project`), or undefined when there is nothing. */
export function gitLabProjectPathProblem(path: string): string | undefined {
  const cut = path.lastIndexOf('/');
  if (cut < 0) return 'is not namespace/project';
  return gitLabNamespaceProblem(path.slice(0, cut)) ?? gitLabSegmentProblem(path.slice(cut + 1), 'project');
}

/** A GitLab project path → its namespace (the owner, slashes and all) and project, or null. */
export function parseGitLabProjectPath(path: string): RepositoryName | null {
  if (gitLabProjectPathProblem(path) !== undefined) return null;
  const cut = path.lastIndexOf('/');
  return { owner: path.slice(0, cut), repo: path.slice(cut + 1) };
}

export const GITLAB_PROJECT_PATH_RULE = `must look like namespace/project (the namespace a group and its subgroups, acme/platform/app): ${GITLAB_SEGMENT_RULE}`;

/** The one spelling of "what a repository name must look like", for error messages. */
export const REPOSITORY_NAME_RULE =
  'must look like owner/repo: letters, digits, "-", "_" and "." in each part, starting with a letter or digit';

/** A repository named with its forge, as run keys name it: `acme/app` (Gitea, Forgejo), `github:acme/app`, `gitlab:acme/platform/app`. */
export interface ForgeRepositoryName extends RepositoryName {
  /** Absent for Gitea and Forgejo. */
  forge?: 'github' | 'gitlab';
}

/** `[github:|gitlab:]owner/repo` → its forge and parts, or the rule it breaks. */
export function parseForgeRepository(text: string): ForgeRepositoryName | { problem: string } {
  const prefixed = /^(github|gitlab):(.*)$/.exec(text);
  if (prefixed?.[1] === 'gitlab') {
    const name = parseGitLabProjectPath(prefixed[2]!);
    return name ? { forge: 'gitlab', ...name } : { problem: GITLAB_PROJECT_PATH_RULE };
  }
  const name = parseRepositoryName(prefixed ? prefixed[2]! : text);
  if (!name) return { problem: REPOSITORY_NAME_RULE };
  return prefixed ? { forge: 'github', ...name } : name;
}

/**
 * A branch name baton passes on (`BATON_BRANCH`): git's `check-ref-format` rules, narrowed to
 * letters, digits, `.`, `_`, `-` and `/`, and never starting with `-` (it would read as an option).
 */
export function isBranchName(name: string): boolean {
  return /^[A-Za-z0-9._/-]{1,200}$/.test(name) && !/^[-/.]/.test(name) && !/(\.\.|\/\/|\/\.|\.lock$|\.lock\/|[/.]$)/.test(name);
}

export const BRANCH_NAME_RULE = 'must be a branch name: letters, digits, ".", "_", "-" and "/", not starting with "-", "." or "/"';
