/**
 * The parts of GitHub's REST API (v3, `application/vnd.github+json`, version 2022-11-28) that baton
 * reads, as the API sends them: snake_case, label colours without `#`. Sources in
 * src/forge/github/SOURCES.md.
 */

export interface GitHubUser {
  id: number;
  login: string;
  name?: string | null;
  site_admin?: boolean;
  /** `User`, `Bot` (an App's `name[bot]`), `Organization`. */
  type?: string;
}

export interface GitHubLabel {
  id: number;
  name: string;
  /** `d73a4a`: no `#`. */
  color: string;
  description: string | null;
}

export interface GitHubIssue {
  id: number;
  number: number;
  title: string;
  body: string | null;
  state: 'open' | 'closed';
  user: GitHubUser;
  labels: GitHubLabel[];
  /** Present (an object of URLs) when the issue is a pull request. */
  pull_request?: { url: string; merged_at?: string | null } | null;
  html_url: string;
  created_at: string;
  updated_at: string;
}

export interface GitHubBranchRef {
  ref: string;
  sha: string;
  /** Null when the fork the branch lived in was deleted. */
  repo: { full_name: string } | null;
}

export interface GitHubPullRequest {
  id: number;
  number: number;
  title: string;
  body: string | null;
  state: 'open' | 'closed';
  draft?: boolean;
  merged?: boolean;
  merged_at: string | null;
  mergeable?: boolean | null;
  user: GitHubUser;
  labels: GitHubLabel[];
  head: GitHubBranchRef;
  base: GitHubBranchRef;
  html_url: string;
  created_at: string;
  updated_at: string;
}

export interface GitHubReview {
  id: number;
  user: GitHubUser | null;
  body: string | null;
  /** `APPROVED`, `CHANGES_REQUESTED`, `COMMENTED`, `DISMISSED`, `PENDING`. */
  state: string;
  commit_id: string | null;
  submitted_at?: string | null;
}

export interface GitHubComment {
  id: number;
  body: string;
  user: GitHubUser;
  html_url: string;
  /** `…/repos/{o}/{r}/issues/{number}`: the issue or pull request it is on. */
  issue_url?: string;
  created_at: string;
  updated_at: string;
}

export interface GitHubTimelineEvent {
  /** Absent on `committed` entries (a commit, not an event). */
  id?: number;
  event: string;
  actor?: GitHubUser | null;
  label?: { name: string; color: string };
  created_at?: string;
}

export interface GitHubRepository {
  name: string;
  owner: GitHubUser;
  archived: boolean;
  private: boolean;
  default_branch: string;
  permissions?: { admin: boolean; maintain?: boolean; push: boolean; triage?: boolean; pull: boolean };
}

export interface GitHubHook {
  id: number;
  /** `web` for every webhook. */
  name: string;
  active: boolean;
  events: string[];
  config: { url?: string; content_type?: string; insecure_ssl?: string; secret?: string };
}

export interface GitHubPermission {
  /** `admin`, `write`, `read`, `none` (maintain reads as write, triage as read). */
  permission: string;
  role_name?: string;
  user: GitHubUser | null;
}
