/**
 * The parts of Gitea's API v1 objects that baton reads (swagger `definitions`; see
 * reference/gitea/API.md). Fields are optional where old Gitea versions omit them.
 */
export interface GiteaUser {
  id: number;
  login: string;
  full_name?: string;
  is_admin?: boolean;
}

export interface GiteaLabel {
  id: number;
  name: string;
  color: string;
  description?: string;
  exclusive?: boolean;
}

export interface GiteaIssue {
  id: number;
  number: number;
  title: string;
  body?: string | null;
  state: 'open' | 'closed';
  user: GiteaUser;
  labels?: GiteaLabel[] | null;
  pull_request?: { merged?: boolean; draft?: boolean; html_url?: string } | null;
  html_url: string;
  created_at: string;
  updated_at: string;
}

export interface GiteaBranchInfo {
  label?: string;
  ref: string;
  sha: string;
  repo?: { full_name?: string } | null;
}

export interface GiteaPullRequest {
  id: number;
  number: number;
  title: string;
  body?: string | null;
  state: 'open' | 'closed';
  draft?: boolean;
  merged?: boolean;
  mergeable?: boolean | null;
  user: GiteaUser;
  labels?: GiteaLabel[] | null;
  head: GiteaBranchInfo;
  base: GiteaBranchInfo;
  html_url: string;
  created_at: string;
  updated_at: string;
}

export interface GiteaComment {
  id: number;
  body: string;
  user: GiteaUser;
  html_url: string;
  /** The issue's web URL; '' on a pull request's comment (models/issues/comment.go `IssueURL`). */
  issue_url?: string;
  /** The pull request's web URL; '' on an issue's comment (`PRURL`). */
  pull_request_url?: string;
  created_at: string;
  updated_at: string;
}

export interface GiteaRepoCollaboratorPermission {
  /** `none | read | write | admin`; Gitea before 1.24 also says `owner`. */
  permission: string;
  role_name?: string;
  user?: GiteaUser;
}

export interface GiteaPullReview {
  id: number;
  user?: GiteaUser | null;
  state: string;
  body?: string;
  commit_id?: string;
  stale?: boolean;
  dismissed?: boolean;
  submitted_at?: string | null;
}

export interface GiteaRepository {
  id: number;
  name: string;
  full_name: string;
  owner?: GiteaUser | null;
  archived?: boolean;
  private?: boolean;
  default_branch?: string;
  /** The token user's rights; absent for anonymous readers. */
  permissions?: { admin?: boolean; push?: boolean; pull?: boolean } | null;
}

/** `Hook` (services/webhook/general.go `ToHook`): `config` never holds the secret. */
export interface GiteaHook {
  id: number;
  type: string;
  config?: Record<string, string> | null;
  events?: string[] | null;
  active?: boolean;
  branch_filter?: string;
  authorization_header?: string;
  created_at?: string;
  updated_at?: string;
}

/**
 * `TimelineComment` (services/convert `ToTimelineComment`): `type` is the comment type's string
 * (`label`, `pull_push`, `comment`, …; models/issues/comment.go `commentStrings`); for `label`,
 * `body` is `"1"` when the label was added and `""` when it was removed (`createLabelComment`).
 */
export interface GiteaTimelineComment {
  id: number;
  type: string;
  body?: string | null;
  user?: GiteaUser | null;
  label?: GiteaLabel | null;
  created_at: string;
  updated_at?: string;
}
