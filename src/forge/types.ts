/**
 * The forge port: what baton reads from and writes to an issue tracker. Domain objects are
 * camelCase and forge-neutral; each client maps its wire format at its own boundary.
 */

/** A repository permission, lowest to highest. A repository owner counts as `admin`. */
export type RepoPermission = 'none' | 'read' | 'write' | 'admin';

export const REPO_PERMISSIONS: readonly RepoPermission[] = ['none', 'read', 'write', 'admin'];

export interface ForgeUser {
  id: number;
  login: string;
  fullName: string;
  isAdmin: boolean;
}

export interface ForgeLabel {
  id: number;
  name: string;
  /** Always `#rrggbb`, lowercase, whatever spelling the forge used. */
  color: string;
  description: string;
  /** Scoped label (`scope/name`): at most one label of a scope on an issue. */
  exclusive: boolean;
}

export interface ForgeIssue {
  id: number;
  number: number;
  title: string;
  body: string;
  state: 'open' | 'closed';
  user: ForgeUser;
  labels: ForgeLabel[];
  /** Pull requests are issues too; this tells them apart. */
  isPullRequest: boolean;
  htmlUrl: string;
  createdAt: string;
  updatedAt: string;
}

export interface ForgeBranchRef {
  /** Branch name. */
  ref: string;
  sha: string;
  /** `owner/name` of the repository the branch lives in (forks differ from the base). */
  repoFullName: string | null;
}

export interface ForgePullRequest {
  id: number;
  number: number;
  title: string;
  body: string;
  state: 'open' | 'closed';
  draft: boolean;
  merged: boolean;
  /** Null while the forge has not computed it yet. */
  mergeable: boolean | null;
  user: ForgeUser;
  labels: ForgeLabel[];
  head: ForgeBranchRef;
  base: ForgeBranchRef;
  htmlUrl: string;
  createdAt: string;
  updatedAt: string;
}

export type ReviewState = 'APPROVED' | 'PENDING' | 'COMMENT' | 'REQUEST_CHANGES' | 'REQUEST_REVIEW';

export interface ForgeReview {
  id: number;
  user: ForgeUser | null;
  state: ReviewState;
  body: string;
  commitId: string;
  /** Superseded by later commits. */
  stale: boolean;
  dismissed: boolean;
  submittedAt: string | null;
}

export interface ForgeComment {
  id: number;
  body: string;
  user: ForgeUser;
  htmlUrl: string;
  createdAt: string;
  updatedAt: string;
}

/** A comment as a repository-wide list names it: with the issue or pull request it is on. */
export interface ForgeRepoComment extends ForgeComment {
  /** The issue's or pull request's number. */
  number: number;
  /**
   * Whether it is on a pull request, where the forge numbers them apart from issues (GitLab's
   * `!7` is not `#7`); elsewhere left out, the number says.
   */
  isPull?: boolean;
}

/**
 * One entry of an issue's timeline that catch-up reads: who added or removed a label, who pushed
 * to a pull request. Other kinds of entries (comments, reviews, renames, …) are `other`.
 */
export interface ForgeTimelineEvent {
  id: number;
  kind: 'label_added' | 'label_removed' | 'pull_push' | 'other';
  /** The forge's own name of the entry (`label`, `pull_push`, `comment`, …). */
  type: string;
  /** Who did it; null when the forge no longer knows the account. */
  user: string | null;
  /** The label's name for `label_added` / `label_removed`. */
  label?: string;
  createdAt: string;
}

/** A repository as its reader sees it, with that reader's own rights on it. */
export interface ForgeRepository {
  owner: string;
  name: string;
  archived: boolean;
  private: boolean;
  defaultBranch: string;
  /**
   * The token user's rights: `admin` is repository admin (what webhooks need); `push` and
   * `pull` are write and read on the code (Gitea 1.20+; they say nothing about issues).
   */
  permissions: { admin: boolean; push: boolean; pull: boolean };
}

/**
 * A repository webhook. `events` are the names a create or edit takes (`issues_only`,
 * `issue_label`, `pull_request_review`, …), whatever spelling the forge answered with.
 */
export interface ForgeHook {
  id: number;
  type: string;
  url: string;
  /** `json` or `form`. */
  contentType: string;
  events: string[];
  active: boolean;
  branchFilter: string;
}

/** What baton's webhooks are: JSON, signed with `secret`, active, for every branch. */
export interface NewForgeHook {
  url: string;
  secret: string;
  events: readonly string[];
}

export interface NewForgeLabel {
  name: string;
  /** `#rrggbb`. */
  color: string;
  description?: string;
}

/**
 * What an issue or pull request number names where the two are numbered apart. On Gitea, Forgejo
 * and GitHub a pull request is an issue (one number space): they ignore it. On GitLab issues
 * (`#7`) and merge requests (`!7`) each count from 1, so the same number is two items and the
 * caller says which (`pull`); without it the number is an issue's.
 */
export type ItemKind = 'issue' | 'pull';

/**
 * The operations baton needs from a forge, acting as one bot account. Every method throws
 * `ForgeError` on failure; `error.retryable` tells a transient failure from a permanent one.
 */
export interface ForgeClient {
  /** The account this client acts as (`GET /user`). */
  getCurrentUser(): Promise<ForgeUser>;
  /** Works for pull requests too (check `isPullRequest`). */
  getIssue(owner: string, repo: string, number: number): Promise<ForgeIssue>;
  getPullRequest(owner: string, repo: string, number: number): Promise<ForgePullRequest>;
  listIssueLabels(owner: string, repo: string, number: number, kind?: ItemKind): Promise<ForgeLabel[]>;
  /** Oldest first. */
  listComments(owner: string, repo: string, number: number, kind?: ItemKind): Promise<ForgeComment[]>;
  createComment(owner: string, repo: string, number: number, body: string, kind?: ItemKind): Promise<ForgeComment>;
  editComment(owner: string, repo: string, commentId: number, body: string): Promise<ForgeComment>;
  /**
   * Reacts to a comment as this account (`eyes`, `+1`, `rocket`, …). Adding a reaction the account
   * already gave is no error: the forge answers with the existing one (Gitea: 200 instead of 201).
   * `on` is the issue or pull request the comment is on: GitLab reaches a note only through it
   * (the other forges address comments by id alone and ignore it).
   */
  addCommentReaction(
    owner: string,
    repo: string,
    commentId: number,
    content: string,
    on?: { number: number; kind?: ItemKind },
  ): Promise<void>;
  /** Labels defined in the repository (every page). */
  listRepoLabels(owner: string, repo: string): Promise<ForgeLabel[]>;
  /**
   * Adds labels by id or name; returns the issue's full label set afterwards. Names the
   * repository does not define are ignored, as Gitea does.
   */
  addIssueLabels(owner: string, repo: string, number: number, labels: readonly (number | string)[], kind?: ItemKind): Promise<ForgeLabel[]>;
  /** Removes one label by id (see `listRepoLabels` to find it). */
  removeIssueLabel(owner: string, repo: string, number: number, labelId: number, kind?: ItemKind): Promise<void>;
  /** Oldest first, every page. */
  listPullReviews(owner: string, repo: string, number: number): Promise<ForgeReview[]>;
  /**
   * Issues (not pull requests), open and closed, whose `updatedAt` is at or after `since` (the
   * forge's own clock, RFC 3339), every page. The order is the forge's (newest created first).
   */
  listIssuesUpdatedSince(owner: string, repo: string, since: string): Promise<ForgeIssue[]>;
  /** Pull requests, open and closed, updated at or after `since`, most recently updated first. */
  listPullRequestsUpdatedSince(owner: string, repo: string, since: string): Promise<ForgePullRequest[]>;
  /**
   * Plain comments on every issue and pull request of the repository whose `updatedAt` is at or
   * after `since` (the forge's clock), oldest created first, every page. Absent on a forge that has
   * no such list (GitLab): catch-up then reads the comments of each item updated since.
   */
  listCommentsUpdatedSince?(owner: string, repo: string, since: string): Promise<ForgeRepoComment[]>;
  /**
   * The reviews given on a pull request as its webhooks announced them, each with when it was
   * given, oldest first, every page: on a forge whose `listPullReviews` cannot say when (GitLab's
   * approvals carry no time), catch-up reads these instead. `commitId` is '' when the forge does
   * not say which head a review was given on.
   */
  listReviewEvents?(owner: string, repo: string, number: number): Promise<ForgeReview[]>;
  /**
   * Makes this account one of the merge request's reviewers, keeping the others; nothing when it
   * is one already. GitLab only: it sets a reviewer state ("Request changes") for reviewers alone.
   */
  addSelfAsReviewer?(owner: string, repo: string, number: number): Promise<void>;
  /** The issue's or pull request's timeline entries (updated at or after `since` when given), oldest first, every page. */
  listTimeline(owner: string, repo: string, number: number, since?: string, kind?: ItemKind): Promise<ForgeTimelineEvent[]>;
  /** `'none'` for a user with no access; throws `ForgeError` (404) when the user or repository does not exist. */
  getUserPermission(owner: string, repo: string, username: string): Promise<RepoPermission>;

  // Onboarding (`baton connect`, `baton doctor`): they need more rights than a bot's everyday work.

  /** The repository with this account's rights on it; `ForgeError` 404 when the account cannot see it. */
  getRepository(owner: string, repo: string): Promise<ForgeRepository>;
  /** The repository's webhooks, every page (repository admin only). */
  listHooks(owner: string, repo: string): Promise<ForgeHook[]>;
  /** Creates an active JSON webhook signed with the secret (repository admin only). */
  createHook(owner: string, repo: string, hook: NewForgeHook): Promise<ForgeHook>;
  /**
   * Sets a webhook's URL, events, JSON content type, `active` and an empty branch filter. The
   * secret cannot be changed this way (the forge ignores it on edit): delete and create instead.
   */
  editHook(owner: string, repo: string, id: number, hook: Omit<NewForgeHook, 'secret'>): Promise<ForgeHook>;
  deleteHook(owner: string, repo: string, id: number): Promise<void>;
  /** Creates a label; the forge accepts a duplicate name, so look first (`listRepoLabels`). */
  createLabel(owner: string, repo: string, label: NewForgeLabel): Promise<ForgeLabel>;
  /**
   * Whether this account may write issues and comments here (token scope and rights), found out
   * without writing anything: `allowed: false` carries the forge's reason.
   */
  issueWriteAccess(owner: string, repo: string): Promise<{ allowed: boolean; reason?: string }>;
}
