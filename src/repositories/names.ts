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
