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
} from '../types.js';
import type {
  GitLabHook,
  GitLabIssue,
  GitLabLabel,
  GitLabLabelEvent,
  GitLabMergeRequest,
  GitLabNote,
  GitLabProject,
  GitLabUser,
} from './wire.js';

/** GitLab's access levels (`access_level`): Guest 10, Planner 15, Reporter 20, Developer 30, Maintainer 40, Owner 50. */
export const ACCESS = { minimal: 5, guest: 10, planner: 15, reporter: 20, developer: 30, maintainer: 40, owner: 50 } as const;

/** Hook flags baton may subscribe to; every other one is sent as false, since GitLab turns `push_events` on unless told. */
export const HOOK_EVENTS = [
  'push_events',
  'issues_events',
  'confidential_issues_events',
  'merge_requests_events',
  'note_events',
  'confidential_note_events',
  'tag_push_events',
  'releases_events',
] as const;

export function toUser(user: GitLabUser): ForgeUser {
  return { id: user.id, login: user.username, fullName: user.name ?? '', isAdmin: user.is_admin ?? false };
}

export function toLabel(label: GitLabLabel): ForgeLabel {
  return {
    id: label.id,
    name: label.name,
    color: normalizeLabelColor(label.color),
    description: label.description ?? '',
    // Scoped labels (`priority::high`): one of a scope on an item at a time.
    exclusive: label.name.includes('::'),
  };
}

/** An item's labels are names: each is made whole from the project's labels (an unknown name keeps a neutral colour). */
export function labelsNamed(names: readonly string[], known: ReadonlyMap<string, ForgeLabel>): ForgeLabel[] {
  return names.map(
    (name) => known.get(name.toLowerCase()) ?? { id: 0, name, color: '#000000', description: '', exclusive: name.includes('::') },
  );
}

function state(value: string): 'open' | 'closed' {
  // `locked` is an open merge request whose discussion is locked.
  return value === 'opened' || value === 'locked' ? 'open' : 'closed';
}

export function toIssue(issue: GitLabIssue, known: ReadonlyMap<string, ForgeLabel>): ForgeIssue {
  return {
    id: issue.id,
    number: issue.iid,
    title: issue.title,
    body: issue.description ?? '',
    state: state(issue.state),
    user: toUser(issue.author),
    labels: labelsNamed(issue.labels ?? [], known),
    // Merge requests are numbered apart; an issue is never one.
    isPullRequest: false,
    htmlUrl: issue.web_url,
    createdAt: issue.created_at,
    updatedAt: issue.updated_at,
  };
}

export function toPullRequest(mr: GitLabMergeRequest, fullName: string, known: ReadonlyMap<string, ForgeLabel>): ForgePullRequest {
  const status = mr.detailed_merge_status;
  return {
    id: mr.id,
    number: mr.iid,
    title: mr.title,
    body: mr.description ?? '',
    state: state(mr.state),
    draft: mr.draft ?? false,
    merged: mr.state === 'merged',
    mergeable: status === undefined || status === 'checking' || status === 'unchecked' ? null : status === 'mergeable',
    user: toUser(mr.author),
    labels: labelsNamed(mr.labels ?? [], known),
    // A fork's branch: the list names its project by id only.
    head: { ref: mr.source_branch, sha: mr.sha ?? '', repoFullName: mr.source_project_id === mr.target_project_id ? fullName : null },
    base: { ref: mr.target_branch, sha: '', repoFullName: fullName },
    htmlUrl: mr.web_url,
    createdAt: mr.created_at,
    updatedAt: mr.updated_at,
  };
}

/** GitLab CE has approvals, not reviews: each approval is an APPROVED review of the head. */
export function toApproval(user: GitLabUser): ForgeReview {
  return { id: user.id, user: toUser(user), state: 'APPROVED', body: '', commitId: '', stale: false, dismissed: false, submittedAt: null };
}

/** A system note of an approval or unapproval as a review: by its author, at its time, on the head it was given on ('' when unknown). */
export function toReviewNote(note: GitLabNote, state: 'APPROVED' | 'REQUEST_CHANGES', commitId: string): ForgeReview {
  return {
    id: note.id,
    user: toUser(note.author),
    state,
    body: '',
    commitId,
    stale: false,
    dismissed: false,
    submittedAt: note.created_at,
  };
}

export function toComment(note: GitLabNote, itemUrl: string): ForgeComment {
  return {
    id: note.id,
    body: note.body ?? '',
    user: toUser(note.author),
    htmlUrl: `${itemUrl}#note_${note.id}`,
    createdAt: note.created_at,
    updatedAt: note.updated_at,
  };
}

export function toTimelineEvent(event: GitLabLabelEvent): ForgeTimelineEvent {
  const kind = event.action === 'add' ? 'label_added' : event.action === 'remove' ? 'label_removed' : 'other';
  return {
    id: event.id,
    kind,
    type: `label_${event.action}`,
    user: event.user?.username ?? null,
    ...(event.label ? { label: event.label.name } : {}),
    createdAt: event.created_at,
  };
}

/** An access level as a repository permission: Maintainer and Owner manage hooks (admin), Developer pushes (write). */
export function toPermission(level: number | undefined): RepoPermission {
  if (level === undefined || level < ACCESS.minimal) return 'none';
  if (level >= ACCESS.maintainer) return 'admin';
  if (level >= ACCESS.developer) return 'write';
  return 'read';
}

export function accessOf(project: GitLabProject): number {
  const p = project.permissions;
  return Math.max(p?.project_access?.access_level ?? 0, p?.group_access?.access_level ?? 0);
}

export function toRepository(project: GitLabProject): ForgeRepository {
  const level = accessOf(project);
  return {
    owner: project.namespace.full_path,
    name: project.path,
    archived: project.archived,
    private: project.visibility !== 'public',
    defaultBranch: project.default_branch ?? '',
    permissions: {
      admin: level >= ACCESS.maintainer,
      push: level >= ACCESS.developer,
      // Anyone signed in reads an internal project, anyone at all a public one.
      pull: level >= ACCESS.guest || project.visibility !== 'private',
    },
  };
}

export function toHook(hook: GitLabHook): ForgeHook {
  return {
    id: hook.id,
    type: 'gitlab',
    url: hook.url,
    // GitLab always sends JSON.
    contentType: 'json',
    events: HOOK_EVENTS.filter((name) => hook[name] === true).sort(),
    active: hook.alert_status === undefined || hook.alert_status === 'executable',
    branchFilter: hook.push_events_branch_filter ?? '',
  };
}
