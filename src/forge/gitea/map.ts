import type {
  ForgeComment,
  ForgeIssue,
  ForgeLabel,
  ForgePullRequest,
  ForgeReview,
  ForgeUser,
  RepoPermission,
  ReviewState,
} from '../types.js';
import type { GiteaComment, GiteaIssue, GiteaLabel, GiteaPullRequest, GiteaPullReview, GiteaUser } from './wire.js';

/**
 * Gitea ≥1.2x sends label colors as `ee0701`, older versions as `#ee0701`; some send uppercase or
 * the 3-digit form. Everything becomes `#rrggbb` so comparisons and the dashboard see one form.
 */
export function normalizeLabelColor(color: string | null | undefined): string {
  const hex = String(color ?? '')
    .trim()
    .replace(/^#/, '')
    .toLowerCase();
  if (/^[0-9a-f]{6}$/.test(hex)) return `#${hex}`;
  if (/^[0-9a-f]{3}$/.test(hex)) return `#${[...hex].map((c) => c + c).join('')}`;
  return hex === '' ? '' : `#${hex}`;
}

export function toUser(user: GiteaUser): ForgeUser {
  return { id: user.id, login: user.login, fullName: user.full_name ?? '', isAdmin: user.is_admin ?? false };
}

export function toLabel(label: GiteaLabel): ForgeLabel {
  return {
    id: label.id,
    name: label.name,
    color: normalizeLabelColor(label.color),
    description: label.description ?? '',
    exclusive: label.exclusive ?? false,
  };
}

export function toIssue(issue: GiteaIssue): ForgeIssue {
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

export function toPullRequest(pr: GiteaPullRequest): ForgePullRequest {
  const ref = (info: GiteaPullRequest['head']) => ({ ref: info.ref, sha: info.sha, repoFullName: info.repo?.full_name ?? null });
  return {
    id: pr.id,
    number: pr.number,
    title: pr.title,
    body: pr.body ?? '',
    state: pr.state,
    draft: pr.draft ?? false,
    merged: pr.merged ?? false,
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

export function toComment(comment: GiteaComment): ForgeComment {
  return {
    id: comment.id,
    body: comment.body,
    user: toUser(comment.user),
    htmlUrl: comment.html_url,
    createdAt: comment.created_at,
    updatedAt: comment.updated_at,
  };
}

/** Gitea before 1.24 reports a repository owner as `owner`; anything unknown grants nothing. */
export function toPermission(permission: string): RepoPermission {
  switch (permission) {
    case 'owner':
    case 'admin':
      return 'admin';
    case 'write':
      return 'write';
    case 'read':
      return 'read';
    default:
      return 'none';
  }
}

export function toReview(review: GiteaPullReview): ForgeReview {
  return {
    id: review.id,
    user: review.user ? toUser(review.user) : null,
    state: review.state as ReviewState,
    body: review.body ?? '',
    commitId: review.commit_id ?? '',
    stale: review.stale ?? false,
    dismissed: review.dismissed ?? false,
    submittedAt: review.submitted_at ?? null,
  };
}
