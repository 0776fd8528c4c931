import { normalizeLabelColor } from '../gitea/index.js';
import type {
  ForgeComment,
  ForgeHook,
  ForgeIssue,
  ForgeLabel,
  ForgePullRequest,
  ForgeRepository,
  ForgeReview,
  ForgeTimelineEvent,
  ForgeUser,
  RepoPermission,
  ReviewState,
} from '../types.js';
import type {
  GitHubComment,
  GitHubHook,
  GitHubIssue,
  GitHubLabel,
  GitHubPullRequest,
  GitHubRepository,
  GitHubReview,
  GitHubTimelineEvent,
  GitHubUser,
} from './wire.js';

export function toUser(user: GitHubUser): ForgeUser {
  return { id: user.id, login: user.login, fullName: user.name ?? '', isAdmin: user.site_admin ?? false };
}

export function toLabel(label: GitHubLabel): ForgeLabel {
  // GitHub has no scoped labels.
  return {
    id: label.id,
    name: label.name,
    color: normalizeLabelColor(label.color),
    description: label.description ?? '',
    exclusive: false,
  };
}

export function toIssue(issue: GitHubIssue): ForgeIssue {
  return {
    id: issue.id,
    number: issue.number,
    title: issue.title,
    body: issue.body ?? '',
    state: issue.state,
    user: toUser(issue.user),
    labels: (issue.labels ?? []).map(toLabel),
    isPullRequest: issue.pull_request !== undefined && issue.pull_request !== null,
    htmlUrl: issue.html_url,
    createdAt: issue.created_at,
    updatedAt: issue.updated_at,
  };
}

export function toPullRequest(pr: GitHubPullRequest): ForgePullRequest {
  const ref = (r: GitHubPullRequest['head']) => ({ ref: r.ref, sha: r.sha, repoFullName: r.repo?.full_name ?? null });
  return {
    id: pr.id,
    number: pr.number,
    title: pr.title,
    body: pr.body ?? '',
    state: pr.state,
    draft: pr.draft ?? false,
    // Lists leave `merged` out; `merged_at` is in both.
    merged: pr.merged ?? (pr.merged_at !== null && pr.merged_at !== undefined),
    mergeable: pr.mergeable ?? null,
    user: toUser(pr.user),
    labels: (pr.labels ?? []).map(toLabel),
    head: ref(pr.head),
    base: ref(pr.base),
    htmlUrl: pr.html_url,
    createdAt: pr.created_at,
    updatedAt: pr.updated_at,
  };
}

const REVIEW_STATES: Record<string, ReviewState> = {
  APPROVED: 'APPROVED',
  CHANGES_REQUESTED: 'REQUEST_CHANGES',
  COMMENTED: 'COMMENT',
  PENDING: 'PENDING',
};

export function toReview(review: GitHubReview): ForgeReview {
  return {
    id: review.id,
    user: review.user ? toUser(review.user) : null,
    state: REVIEW_STATES[review.state] ?? 'COMMENT',
    body: review.body ?? '',
    commitId: review.commit_id ?? '',
    // GitHub keeps a review on its commit; a later push does not mark it stale.
    stale: false,
    dismissed: review.state === 'DISMISSED',
    submittedAt: review.submitted_at ?? null,
  };
}

export function toComment(comment: GitHubComment): ForgeComment {
  return {
    id: comment.id,
    body: comment.body ?? '',
    user: toUser(comment.user),
    htmlUrl: comment.html_url,
    createdAt: comment.created_at,
    updatedAt: comment.updated_at,
  };
}

/**
 * Only entries with an id and an actor count. `committed` entries (one per commit, named by the
 * commit's git author, not a GitHub login) are left out: a push is told by `head_ref_force_pushed`
 * only, so catch-up may say it cannot name who pushed.
 */
export function toTimelineEvent(entry: GitHubTimelineEvent): ForgeTimelineEvent | undefined {
  if (typeof entry.id !== 'number' || typeof entry.created_at !== 'string') return undefined;
  const kinds: Record<string, ForgeTimelineEvent['kind']> = {
    labeled: 'label_added',
    unlabeled: 'label_removed',
    head_ref_force_pushed: 'pull_push',
  };
  return {
    id: entry.id,
    kind: kinds[entry.event] ?? 'other',
    type: entry.event,
    user: entry.actor?.login ?? null,
    ...(entry.label ? { label: entry.label.name } : {}),
    createdAt: entry.created_at,
  };
}

export function toPermission(permission: string): RepoPermission {
  if (permission === 'admin') return 'admin';
  if (permission === 'write' || permission === 'maintain') return 'write';
  if (permission === 'read' || permission === 'triage') return 'read';
  return 'none';
}

export function toRepository(repo: GitHubRepository): ForgeRepository {
  const p = repo.permissions;
  return {
    owner: repo.owner.login,
    name: repo.name,
    archived: repo.archived,
    private: repo.private,
    defaultBranch: repo.default_branch,
    permissions: { admin: p?.admin ?? false, push: p?.push ?? false, pull: p?.pull ?? false },
  };
}

export function toHook(hook: GitHubHook): ForgeHook {
  return {
    id: hook.id,
    type: hook.name,
    url: hook.config.url ?? '',
    contentType: hook.config.content_type ?? 'form',
    events: [...hook.events].sort(),
    active: hook.active,
    // GitHub webhooks have no branch filter.
    branchFilter: '',
  };
}
