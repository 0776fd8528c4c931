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

/** The one spelling of "what a repository name must look like", for error messages. */
export const REPOSITORY_NAME_RULE =
  'must look like owner/repo: letters, digits, "-", "_" and "." in each part, starting with a letter or digit';

/**
 * A branch name baton passes on (`BATON_BRANCH`): git's `check-ref-format` rules, narrowed to
 * letters, digits, `.`, `_`, `-` and `/`, and never starting with `-` (it would read as an option).
 */
export function isBranchName(name: string): boolean {
  return /^[A-Za-z0-9._/-]{1,200}$/.test(name) && !/^[-/.]/.test(name) && !/(\.\.|\/\/|\/\.|\.lock$|\.lock\/|[/.]$)/.test(name);
}

export const BRANCH_NAME_RULE = 'must be a branch name: letters, digits, ".", "_", "-" and "/", not starting with "-", "." or "/"';
