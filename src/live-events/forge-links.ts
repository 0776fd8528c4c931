import { forgeIsNamed, type ForgeName } from '../runs/index.js';

/**
 * The web roots of the configured forges (`GITEA_URL`, `GITHUB_URL`, `GITLAB_URL`), the only
 * places baton links to: never a URL from a payload.
 */
export type ForgeWebRoots = Partial<Record<'gitea' | 'github' | 'gitlab', string>>;

/** An issue, pull request or GitLab merge request, as baton names it. */
export interface ForgeItemRef {
  forge?: ForgeName;
  owner: string;
  repo: string;
  number: number;
  /** A pull request (Gitea, GitHub) or merge request (GitLab), not an issue. */
  pull?: boolean;
}

/**
 * Its page on its forge, or null when that forge is not configured. Each forge spells the path
 * its own way: Gitea `/{owner}/{repo}/issues/N` and `/pulls/N`, GitHub `/issues/N` and `/pull/N`,
 * GitLab `/{namespace}/{project}/-/issues/N` and `/-/merge_requests/N` (a namespace with its
 * subgroups is several path segments, each encoded on its own).
 */
export function forgeItemUrl(roots: ForgeWebRoots, item: ForgeItemRef): string | null {
  const forge = forgeIsNamed(item.forge) ? item.forge : 'gitea';
  const root = roots[forge]?.replace(/\/+$/, '');
  if (!root) return null;
  const repository = [...item.owner.split('/'), item.repo].map(encodeURIComponent).join('/');
  if (forge === 'gitlab') return `${root}/${repository}/-/${item.pull ? 'merge_requests' : 'issues'}/${item.number}`;
  if (forge === 'github') return `${root}/${repository}/${item.pull ? 'pull' : 'issues'}/${item.number}`;
  return `${root}/${repository}/${item.pull ? 'pulls' : 'issues'}/${item.number}`;
}
