/**
 * Wire shapes, built like Gitea's `convert.ToUser`, `ToAPIIssue`, `ToAPIPullRequest`,
 * `ToAPIComment`, `ToLabel` (field names from the swagger definitions in reference/gitea/API.md).
 */
import crypto from 'node:crypto';
import type {
  CommentRecord,
  FakeGiteaState,
  HookRecord,
  IssueRecord,
  LabelRecord,
  RepoRecord,
  ReviewRecord,
  TimelineRecord,
  UserRecord,
} from './state.js';

export function renderUser(base: string, user: UserRecord) {
  return {
    id: user.id,
    login: user.login,
    login_name: '',
    source_id: 0,
    full_name: user.fullName,
    email: user.email,
    avatar_url: `${base}/avatars/${crypto.createHash('md5').update(user.email).digest('hex')}`,
    html_url: `${base}/${user.login}`,
    language: '',
    is_admin: user.isAdmin,
    last_login: '0001-01-01T00:00:00Z',
    created: user.createdAt,
    restricted: false,
    active: true,
    prohibit_login: false,
    location: '',
    website: '',
    description: '',
    visibility: 'public',
    followers_count: 0,
    following_count: 0,
    starred_repos_count: 0,
    username: user.login,
  };
}

export function renderLabel(base: string, repo: RepoRecord, label: LabelRecord) {
  return {
    id: label.id,
    name: label.name,
    exclusive: label.exclusive,
    is_archived: false,
    color: label.color,
    description: label.description,
    url: `${base}/api/v1/repos/${repo.owner}/${repo.name}/labels/${label.id}`,
  };
}

export function renderRepoMeta(repo: RepoRecord) {
  return { id: repo.id, name: repo.name, owner: repo.owner, full_name: `${repo.owner}/${repo.name}` };
}

/**
 * `convert.ToRepo`. With `viewer`, `permissions` holds that user's own rights as
 * `GET /repos/{owner}/{repo}` answers them: `admin` at admin access, `push`/`pull` at write/read.
 */
export function renderRepository(base: string, state: FakeGiteaState, repo: RepoRecord, viewer?: UserRecord) {
  const owner = state.userByLogin(repo.owner);
  return {
    id: repo.id,
    owner: owner ? renderUser(base, owner) : null,
    name: repo.name,
    full_name: `${repo.owner}/${repo.name}`,
    description: '',
    empty: false,
    private: repo.private,
    fork: false,
    archived: repo.archived,
    html_url: `${base}/${repo.owner}/${repo.name}`,
    url: `${base}/api/v1/repos/${repo.owner}/${repo.name}`,
    clone_url: `${base}/${repo.owner}/${repo.name}.git`,
    default_branch: repo.defaultBranch,
    object_format_name: 'sha1',
    ...(viewer ? { permissions: permissionsOf(state, repo, viewer) } : {}),
  };
}

function permissionsOf(state: FakeGiteaState, repo: RepoRecord, viewer: UserRecord) {
  const access = state.permission(viewer, repo);
  return { admin: access === 'admin', push: access === 'admin' || access === 'write', pull: access !== 'none' };
}

/**
 * `webhook_service.ToHook`: `config` has the URL and content type, never the secret; the
 * authorization header comes back empty (Gitea 1.27.0+). Events are the stored flags; Gitea up to
 * 1.23 names the review flag by its three delivery types (`legacyReviewEvents`).
 */
export function renderHook(hook: HookRecord, legacyReviewEvents: boolean) {
  const events = [...hook.events].flatMap((e) =>
    e === 'pull_request_review' && legacyReviewEvents
      ? ['pull_request_review_approved', 'pull_request_review_rejected', 'pull_request_review_comment']
      : [e],
  );
  return {
    id: hook.id,
    type: hook.type,
    branch_filter: hook.branchFilter,
    config: { url: hook.url, content_type: hook.contentType },
    events,
    authorization_header: '',
    active: hook.active,
    updated_at: hook.updatedAt,
    created_at: hook.createdAt,
  };
}

export function renderIssue(base: string, state: FakeGiteaState, repo: RepoRecord, issue: IssueRecord) {
  const author = state.users.get(issue.authorId)!;
  const kind = issue.pull ? 'pulls' : 'issues';
  return {
    id: issue.id,
    url: `${base}/api/v1/repos/${repo.owner}/${repo.name}/issues/${issue.number}`,
    html_url: `${base}/${repo.owner}/${repo.name}/${kind}/${issue.number}`,
    number: issue.number,
    user: renderUser(base, author),
    original_author: '',
    original_author_id: 0,
    title: issue.title,
    body: issue.body,
    ref: '',
    assets: [],
    labels: issue.labelIds.map((id) => renderLabel(base, repo, state.labels.get(id)!)),
    milestone: null,
    assignee: null,
    assignees: null,
    state: issue.state,
    is_locked: false,
    comments: state.issueComments(repo.id, issue.number).length,
    created_at: issue.createdAt,
    updated_at: issue.updatedAt,
    closed_at: null,
    due_date: null,
    time_estimate: 0,
    content_version: 0,
    pull_request: issue.pull
      ? {
          merged: issue.pull.merged,
          merged_at: null,
          draft: issue.pull.draft,
          html_url: `${base}/${repo.owner}/${repo.name}/pulls/${issue.number}`,
        }
      : null,
    repository: renderRepoMeta(repo),
    pin_order: 0,
  };
}

export function renderPullRequest(base: string, state: FakeGiteaState, repo: RepoRecord, issue: IssueRecord) {
  const pull = issue.pull!;
  const author = state.users.get(issue.authorId)!;
  const repository = renderRepository(base, state, repo);
  const branch = (ref: string, sha: string) => ({ label: ref, ref, sha, repo_id: repo.id, repo: repository });
  return {
    id: issue.id,
    url: `${base}/${repo.owner}/${repo.name}/pulls/${issue.number}`,
    number: issue.number,
    user: renderUser(base, author),
    title: issue.title,
    body: issue.body,
    labels: issue.labelIds.map((id) => renderLabel(base, repo, state.labels.get(id)!)),
    milestone: null,
    assignee: null,
    assignees: null,
    requested_reviewers: [],
    requested_reviewers_teams: [],
    state: issue.state,
    draft: pull.draft,
    is_locked: false,
    comments: state.issueComments(repo.id, issue.number).length,
    review_comments: 0,
    additions: 0,
    deletions: 0,
    changed_files: 0,
    html_url: `${base}/${repo.owner}/${repo.name}/pulls/${issue.number}`,
    diff_url: `${base}/${repo.owner}/${repo.name}/pulls/${issue.number}.diff`,
    patch_url: `${base}/${repo.owner}/${repo.name}/pulls/${issue.number}.patch`,
    mergeable: pull.mergeable,
    merged: pull.merged,
    merged_at: null,
    merge_commit_sha: null,
    merged_by: null,
    allow_maintainer_edit: false,
    base: branch(pull.baseRef, pull.baseSha),
    head: branch(pull.headRef, pull.headSha),
    merge_base: pull.baseSha,
    due_date: null,
    created_at: issue.createdAt,
    updated_at: issue.updatedAt,
    closed_at: null,
    pin_order: 0,
  };
}

export function renderComment(base: string, state: FakeGiteaState, repo: RepoRecord, comment: CommentRecord) {
  const issue = state.issue(repo.id, comment.issueNumber)!;
  const kind = issue.pull ? 'pulls' : 'issues';
  return {
    id: comment.id,
    html_url: `${base}/${repo.owner}/${repo.name}/${kind}/${comment.issueNumber}#issuecomment-${comment.id}`,
    pull_request_url: issue.pull ? `${base}/${repo.owner}/${repo.name}/pulls/${comment.issueNumber}` : '',
    issue_url: issue.pull ? '' : `${base}/${repo.owner}/${repo.name}/issues/${comment.issueNumber}`,
    user: renderUser(base, state.users.get(comment.authorId)!),
    original_author: '',
    original_author_id: 0,
    body: comment.body,
    assets: [],
    created_at: comment.createdAt,
    updated_at: comment.updatedAt,
  };
}

export function renderReview(base: string, state: FakeGiteaState, repo: RepoRecord, review: ReviewRecord) {
  return {
    id: review.id,
    user: renderUser(base, state.users.get(review.authorId)!),
    team: null,
    state: review.state,
    body: review.body,
    commit_id: review.commitId,
    stale: false,
    official: true,
    dismissed: false,
    comments_count: 0,
    submitted_at: review.submittedAt,
    updated_at: review.submittedAt,
    html_url: `${base}/${repo.owner}/${repo.name}/pulls/${review.number}#issuecomment-${review.id}`,
    pull_request_url: `${base}/${repo.owner}/${repo.name}/pulls/${review.number}`,
  };
}

/** `convert.ToTimelineComment`: the comment type as a string, the label for `label` entries. */
export function renderTimeline(base: string, state: FakeGiteaState, repo: RepoRecord, entry: TimelineRecord) {
  const issue = state.issue(repo.id, entry.number)!;
  const kind = issue.pull ? 'pulls' : 'issues';
  const label = entry.labelId === undefined ? undefined : state.labels.get(entry.labelId);
  return {
    id: entry.id,
    type: entry.type,
    body: entry.content,
    user: renderUser(base, state.users.get(entry.authorId)!),
    html_url: `${base}/${repo.owner}/${repo.name}/${kind}/${entry.number}#issuecomment-${entry.id}`,
    issue_url: issue.pull ? '' : `${base}/${repo.owner}/${repo.name}/issues/${entry.number}`,
    pull_request_url: issue.pull ? `${base}/${repo.owner}/${repo.name}/pulls/${entry.number}` : '',
    label: label ? renderLabel(base, repo, label) : null,
    created_at: entry.createdAt,
    updated_at: entry.updatedAt,
  };
}
