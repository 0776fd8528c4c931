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
  listIssueLabels(owner: string, repo: string, number: number): Promise<ForgeLabel[]>;
  /** Oldest first. */
  listComments(owner: string, repo: string, number: number): Promise<ForgeComment[]>;
  createComment(owner: string, repo: string, number: number, body: string): Promise<ForgeComment>;
  editComment(owner: string, repo: string, commentId: number, body: string): Promise<ForgeComment>;
  /** Labels defined in the repository (every page). */
  listRepoLabels(owner: string, repo: string): Promise<ForgeLabel[]>;
  /**
   * Adds labels by id or name; returns the issue's full label set afterwards. Names the
   * repository does not define are ignored, as Gitea does.
   */
  addIssueLabels(owner: string, repo: string, number: number, labels: readonly (number | string)[]): Promise<ForgeLabel[]>;
  /** Removes one label by id (see `listRepoLabels` to find it). */
  removeIssueLabel(owner: string, repo: string, number: number, labelId: number): Promise<void>;
  /** Oldest first, every page. */
  listPullReviews(owner: string, repo: string, number: number): Promise<ForgeReview[]>;
  /** `'none'` for a user with no access; throws `ForgeError` (404) when the user or repository does not exist. */
  getUserPermission(owner: string, repo: string, username: string): Promise<RepoPermission>;
}
