/** The fake GitLab's data, as GitLab keeps it (see SOURCES.md). */

/** GitLab's access levels: Guest 10, Planner 15, Reporter 20, Developer 30, Maintainer 40, Owner 50. */
export type AccessLevel = 0 | 5 | 10 | 15 | 20 | 30 | 40 | 50;

export interface UserRecord {
  id: number;
  username: string;
  name: string;
  bot: boolean;
}

export interface LabelRecord {
  id: number;
  name: string;
  /** `#rrggbb`, as GitLab answers. */
  color: string;
  description: string;
}

export interface NoteRecord {
  id: number;
  author: string;
  body: string;
  system: boolean;
  createdAt: string;
  updatedAt: string;
  awards: { id: number; user: string; name: string }[];
}

/**
 * A reviewer's state (gitlab-org/gitlab app/models/merge_request_reviewer.rb `state` enum, as the
 * webhook documentation's "Reviewer state tracking" lists it).
 */
export type ReviewerState = 'unreviewed' | 'review_started' | 'reviewed' | 'requested_changes' | 'approved' | 'unapproved';

export interface ReviewerRecord {
  username: string;
  state: ReviewerState;
  reRequested: boolean;
  createdAt: string;
}

export interface LabelEventRecord {
  id: number;
  user: string;
  label: string;
  action: 'add' | 'remove';
  createdAt: string;
}

export interface ItemRecord {
  id: number;
  iid: number;
  title: string;
  description: string;
  /** `opened`, `closed`, and for merge requests `merged`, `locked`. */
  state: string;
  author: string;
  labels: string[];
  createdAt: string;
  updatedAt: string;
  notes: NoteRecord[];
  labelEvents: LabelEventRecord[];
  /** Set for a merge request (numbered apart from issues). */
  mr?: {
    source: string;
    target: string;
    sha: string;
    approvedBy: string[];
    /** Its reviewers, in the order they were added. */
    reviewers: ReviewerRecord[];
    draft: boolean;
    /** Its diff versions, oldest first: one when it is opened, one more per push (`pushToMergeRequest`). */
    versions: { id: number; headSha: string; createdAt: string }[];
  };
}

export interface HookRecord {
  id: number;
  url: string;
  token: string;
  flags: Record<string, boolean>;
  branchFilter: string;
  /** `executable`, `temporarily_disabled`, `disabled` (GitLab's auto-disabling). */
  alertStatus: string;
  /** Failures in a row (4 disable the hook for a while, 40 for good). */
  failures: number;
  uuid: string;
}

export interface HookEventRecord {
  id: number;
  hook: number;
  trigger: string;
  event: string;
  body: string;
  idempotencyKey: string;
  status: number;
}

export interface ProjectRecord {
  id: number;
  namespace: string;
  path: string;
  visibility: 'private' | 'internal' | 'public';
  archived: boolean;
  defaultBranch: string;
  labels: LabelRecord[];
  issues: ItemRecord[];
  mergeRequests: ItemRecord[];
  hooks: HookRecord[];
  hookEvents: HookEventRecord[];
  /** Lower-cased username → the access level given in the project itself. */
  members: Map<string, AccessLevel>;
}

export class FakeGitLabState {
  private nextId = 2000;
  readonly users = new Map<string, UserRecord>();
  readonly tokens = new Map<string, string>();
  readonly projects = new Map<string, ProjectRecord>();
  /** Lower-cased group full path (`acme`, `acme/platform`) → lower-cased username → access level. */
  readonly groups = new Map<string, Map<string, AccessLevel>>();

  /**
   * GitLab's feature flags the fake follows. `assignReviewerOnSubmission`
   * (`assign_reviewer_on_review_submission`): a review submitted by someone who is not a reviewer
   * (and not the author) makes them one (UpdateReviewerStateService#resolve_reviewer); off, their
   * reviewer state is not set ("Reviewer not found", which the API does not report).
   */
  readonly features = { assignReviewerOnSubmission: false };

  constructor(readonly now: () => Date = () => new Date()) {}

  id(): number {
    return this.nextId++;
  }

  /** GitLab's API timestamps: milliseconds, `Z` (`2016-01-04T15:31:51.081Z`). */
  timestamp(): string {
    return this.now().toISOString();
  }

  user(username: string): UserRecord | undefined {
    return this.users.get(username.toLowerCase());
  }

  project(path: string): ProjectRecord | undefined {
    return this.projects.get(path.toLowerCase());
  }

  /**
   * The user's access level in the project as `members/all` answers it: the highest of the
   * project's own membership and that of every group above it, the parent groups of a subgroup
   * included (GitLab's "Group and project members API": `members/all` lists "direct, inherited
   * and invited members"; a member of a group is a member of its subgroups and their projects).
   */
  accessOf(project: ProjectRecord, username: string): AccessLevel {
    const name = username.toLowerCase();
    const segments = project.namespace.toLowerCase().split('/');
    const levels = segments.map((_, i) => this.groups.get(segments.slice(0, i + 1).join('/'))?.get(name) ?? 0);
    return Math.max(project.members.get(name) ?? 0, ...levels) as AccessLevel;
  }
}
