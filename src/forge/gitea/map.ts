import type {
  ForgeComment,
  ForgeRepoComment,
  ForgeHook,
  ForgeIssue,
  ForgeRepository,
  ForgeLabel,
  ForgePullRequest,
  ForgeReview,
  ForgeTimelineEvent,
  ForgeUser,
  RepoPermission,
  ReviewState,
} from '../types.js';
import type {
  GiteaComment,
  GiteaHook,
  GiteaIssue,
  GiteaLabel,
  GiteaPullRequest,
  GiteaPullReview,
  GiteaRepository,
  GiteaTimelineComment,
  GiteaUser,
} from './wire.js';

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

/**
 * A comment of the repository-wide list, with the number of its issue or pull request, read from
 * `issue_url` or `pull_request_url` (web URLs ending in `/issues/<n>` or `/pulls/<n>`; the one
 * that does not apply is ''). null when neither names a number.
 */
export function toRepoComment(comment: GiteaComment): ForgeRepoComment | null {
  const url = comment.pull_request_url || comment.issue_url || '';
  const match = /\/(?:issues|pulls)\/(\d+)\/?$/.exec(url);
  const number = match ? Number(match[1]) : NaN;
  if (!Number.isSafeInteger(number) || number < 1) return null;
  return { ...toComment(comment), number };
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

export function toRepository(repo: GiteaRepository): ForgeRepository {
  const [owner = repo.owner?.login ?? '', name = repo.name] = repo.full_name.split('/');
  return {
    owner,
    name,
    archived: repo.archived ?? false,
    private: repo.private ?? false,
    defaultBranch: repo.default_branch ?? '',
    permissions: {
      admin: repo.permissions?.admin === true,
      push: repo.permissions?.push === true,
      pull: repo.permissions?.pull === true,
    },
  };
}

/**
 * A hook's events in the names a create or edit takes (reference/gitea/API.md, webhooks): in an
 * answer `issues` and `pull_request` mean only the bare open/close/edit events (`issues_only`,
 * `pull_request_only` when asking), and Gitea up to 1.23 shows the review flag as its three
 * delivery types, which an edit does not accept.
 */
export function toHook(hook: GiteaHook): ForgeHook {
  const events = new Set<string>();
  for (const raw of hook.events ?? []) {
    const event = raw.toLowerCase();
    if (event === 'issues') events.add('issues_only');
    else if (event === 'pull_request') events.add('pull_request_only');
    else if (/^pull_request_review_(approved|rejected|comment)$/.test(event)) events.add('pull_request_review');
    else events.add(event);
  }
  return {
    id: hook.id,
    type: hook.type,
    url: hook.config?.url ?? '',
    contentType: hook.config?.content_type ?? '',
    events: [...events].sort(),
    active: hook.active ?? false,
    branchFilter: hook.branch_filter ?? '',
  };
}

export function toTimelineEvent(entry: GiteaTimelineComment): ForgeTimelineEvent {
  const label = entry.type === 'label' ? entry.label?.name : undefined;
  const kind: ForgeTimelineEvent['kind'] =
    entry.type === 'pull_push' ? 'pull_push' : label !== undefined ? (entry.body === '1' ? 'label_added' : 'label_removed') : 'other';
  return {
    id: entry.id,
    kind,
    type: entry.type,
    user: entry.user?.login ?? null,
    ...(label !== undefined ? { label } : {}),
    createdAt: entry.created_at,
  };
}
