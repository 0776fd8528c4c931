/**
 * The parts of GitLab's REST API v4 that baton reads, as the API sends them: snake_case, label
 * colours with `#`, issues and merge requests numbered by `iid` within their project. Sources in
 * src/forge/gitlab/SOURCES.md.
 */

export interface GitLabUser {
  id: number;
  username: string;
  name?: string | null;
  /** Only in answers to an administrator (or about oneself on `GET /user`). */
  is_admin?: boolean;
  bot?: boolean;
}

export interface GitLabLabel {
  id: number;
  name: string;
  /** `#d9534f`, or a CSS colour name for labels made long ago. */
  color: string;
  description: string | null;
}

export interface GitLabIssue {
  id: number;
  iid: number;
  project_id: number;
  title: string;
  description: string | null;
  /** `opened` or `closed`. */
  state: string;
  author: GitLabUser;
  /** Names only (the default `with_labels_details=false`). */
  labels: string[];
  web_url: string;
  created_at: string;
  updated_at: string;
}

export interface GitLabMergeRequest {
  id: number;
  iid: number;
  project_id: number;
  title: string;
  description: string | null;
  /** `opened`, `closed`, `locked` or `merged`. */
  state: string;
  draft?: boolean;
  /** `mergeable`, `checking`, `unchecked`, `conflict`, `not_approved`, … */
  detailed_merge_status?: string;
  author: GitLabUser;
  labels: string[];
  source_branch: string;
  target_branch: string;
  source_project_id: number;
  target_project_id: number;
  /** The head commit. */
  sha: string | null;
  web_url: string;
  created_at: string;
  updated_at: string;
  merged_at?: string | null;
}

export interface GitLabNote {
  id: number;
  body: string;
  author: GitLabUser;
  /** Notes GitLab writes itself ("added ~bug label", "mentioned in …"). */
  system: boolean;
  noteable_type?: string;
  noteable_iid?: number | null;
  created_at: string;
  updated_at: string;
}

/** A merge request's diff version: one per push, naming the head it was made of. */
export interface GitLabVersion {
  id: number;
  head_commit_sha: string;
  created_at: string;
}

export interface GitLabLabelEvent {
  id: number;
  user: GitLabUser | null;
  created_at: string;
  /** Null when the label was deleted since. */
  label: { id: number; name: string } | null;
  /** `add` or `remove`. */
  action: string;
}

export interface GitLabApprovals {
  approved_by?: { user: GitLabUser }[];
}

export interface GitLabAccess {
  access_level: number;
}

export interface GitLabProject {
  id: number;
  path: string;
  path_with_namespace: string;
  namespace: { full_path: string; path?: string };
  archived: boolean;
  /** `private`, `internal` or `public`. */
  visibility: string;
  default_branch: string | null;
  web_url: string;
  /** The caller's own access; null where the caller has none of that kind. */
  permissions?: { project_access: GitLabAccess | null; group_access: GitLabAccess | null };
}

export interface GitLabMember {
  id: number;
  username: string;
  access_level: number;
}

/** A project hook: each event is a boolean `<name>_events` flag. The token is never read back. */
export interface GitLabHook {
  id: number;
  url: string;
  push_events?: boolean;
  push_events_branch_filter?: string | null;
  issues_events?: boolean;
  confidential_issues_events?: boolean;
  merge_requests_events?: boolean;
  note_events?: boolean;
  confidential_note_events?: boolean;
  tag_push_events?: boolean;
  releases_events?: boolean;
  enable_ssl_verification?: boolean;
  /** `executable`, `temporarily_disabled` (failing, backing off) or `disabled` (40 failures). */
  alert_status?: string;
  disabled_until?: string | null;
}
