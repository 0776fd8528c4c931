import { HttpError } from '../../web-kit/index.js';
import type { ForgeEvent, ForgeEventKind, ReviewState } from '../../pipeline/index.js';
import { gitLabProjectPathProblem, parseGitLabProjectPath } from '../../repositories/index.js';

type Json = Record<string, unknown>;

export type GitLabClassified = { kind: ForgeEventKind; event: string; review?: ReviewState } | { unsupported: string };

/**
 * GitLab's events (`X-Gitlab-Event`) and `object_attributes.action`s as pipeline kinds. Source:
 * GitLab's "Webhook events" page (doc/user/project/integrations/webhook_events.md), whose
 * example bodies the tests read (test/fixtures/gitlab/, see src/forge/gitlab/SOURCES.md).
 *
 * - `Issue Hook` (and `Confidential Issue Hook`): open | close | reopen; update → `issue_labels`
 *   when `changes.labels` is there (the labels after the change are compared with the label
 *   memory, as on Gitea), else `issue_edited`
 * - `Note Hook` (and `Confidential Note Hook`): `noteable_type` Issue → `issue_comment`,
 *   MergeRequest → `pr_comment`; notes on commits and snippets are `other`
 * - `Merge Request Hook`: open | close | reopen | merge (closed, merged); update → `pr_synchronized`
 *   when `object_attributes.oldrev` is there (new commits: GitLab sends it only for a change of
 *   code), `pr_labels` when `changes.labels` is, else `pr_edited`; `approval` (one user approves) →
 *   review approved; `unapproval` (one user takes their approval back) → review rejected; the
 *   all-approvals-met `approved`/`unapproved` are `other`, so one click is one review
 * - `Push Hook` → `push`; every other event (Tag Push, Pipeline, Job, Wiki, …) is unsupported
 */
export function classifyGitLab(event: string, payload: Json): GitLabClassified {
  const name = event.trim();
  const attributes = isObject(payload.object_attributes) ? payload.object_attributes : {};
  const action = typeof attributes.action === 'string' ? attributes.action : '';
  const changes = isObject(payload.changes) ? payload.changes : {};
  switch (name) {
    case 'Issue Hook':
    case 'Confidential Issue Hook': {
      if (action === 'update') return { kind: isObject(changes.labels) ? 'issue_labels' : 'issue_edited', event: name };
      const kinds: Record<string, ForgeEventKind> = { open: 'issue_opened', close: 'issue_closed', reopen: 'issue_reopened' };
      return { kind: kinds[action] ?? 'other', event: name };
    }
    case 'Note Hook':
    case 'Confidential Note Hook': {
      const type = attributes.noteable_type;
      if (attributes.system === true) return { kind: 'other', event: name };
      return { kind: type === 'Issue' ? 'issue_comment' : type === 'MergeRequest' ? 'pr_comment' : 'other', event: name };
    }
    case 'Merge Request Hook': {
      if (action === 'update') {
        if (typeof attributes.oldrev === 'string' && attributes.oldrev !== '') return { kind: 'pr_synchronized', event: name };
        const review = senderReview(payload, changes);
        if (review) return { kind: 'review', event: name, review };
        return { kind: isObject(changes.labels) ? 'pr_labels' : 'pr_edited', event: name };
      }
      if (action === 'approval') return { kind: 'review', event: name, review: 'approved' };
      if (action === 'unapproval') return { kind: 'review', event: name, review: 'rejected' };
      const kinds: Record<string, ForgeEventKind> = { open: 'pr_opened', close: 'pr_closed', reopen: 'pr_reopened', merge: 'pr_closed' };
      return { kind: kinds[action] ?? 'other', event: name };
    }
    case 'Push Hook':
      return { kind: 'push', event: name };
    default:
      return { unsupported: name };
  }
}

/**
 * The review this update is, when it turned the sender's (`user.username`) reviewer state into
 * `requested_changes` (a rejected review) or `reviewed` (a review with comments only, GitHub's
 * `commented`: draft_notes/bulk_publish's two states) from any other state. Only the sender's own entry counts: the review must be the act of the user
 * whose permission baton checks. From `approved` too: GitLab takes the approval back then without
 * an `unapproval` hook (gitlab-org/gitlab app/services/merge_requests/update_reviewer_state_service.rb
 * sends this `update`, then base_service.rb `remove_approval` passes `skip_notification`, which
 * remove_approval_service.rb's `trigger_approval_hooks` returns on), so this is the click's one review;
 * were an `unapproval` sent as well, it would be the same fact (reviewer, merge request, head: facts.ts),
 * so still one effect.
 */
function senderReview(payload: Json, changes: Json): 'rejected' | 'comment' | undefined {
  const user = isObject(payload.user) ? payload.user.username : undefined;
  const reviewers = isObject(changes.reviewers) ? changes.reviewers : undefined;
  if (typeof user !== 'string' || user === '' || !reviewers) return undefined;
  const stateOf = (list: unknown) => {
    if (!Array.isArray(list)) return undefined;
    const entry: unknown = list.find((r) => isObject(r) && r.username === user);
    return isObject(entry) && typeof entry.state === 'string' ? entry.state : undefined;
  };
  const [before, after] = [stateOf(reviewers.previous), stateOf(reviewers.current)];
  if (after === before) return undefined;
  return after === 'requested_changes' ? 'rejected' : after === 'reviewed' ? 'comment' : undefined;
}

/**
 * Namespace and name of the project (`project.path_with_namespace`), split at its last `/`: the
 * namespace, a group's subgroups included (`acme/platform`), is the owner. Every segment must be
 * one GitLab could have made (repositories/names.ts): the path becomes part of the clone URL and
 * of the gateway's API paths.
 */
export function readGitLabRepository(payload: Json): { owner: string; repo: string } {
  const project = object(payload, 'project', 'project');
  const path = string(project, 'path_with_namespace', 'project.path_with_namespace');
  const problem = gitLabProjectPathProblem(path);
  if (problem) throw new HttpError(400, 'bad_request', `project.path_with_namespace ${problem}`);
  return parseGitLabProjectPath(path)!;
}

/**
 * Builds the ForgeEvent of a GitLab delivery. Throws HttpError(400) naming the first missing or
 * mistyped field the rules need. Nothing of `project` but its path is read: its `git_http_url`
 * is the sender's to write, and baton clones from GITLAB_URL only.
 */
export function gitLabForgeEvent(
  classified: { kind: ForgeEventKind; event: string; review?: ReviewState },
  payload: Json,
): { event: ForgeEvent; labelsKnown: boolean } {
  const { owner, repo } = readGitLabRepository(payload);
  const sender =
    classified.kind === 'push'
      ? string(payload, 'user_username', 'user_username')
      : string(object(payload, 'user', 'user'), 'username', 'user.username');
  const attributes = isObject(payload.object_attributes) ? payload.object_attributes : {};
  const action = typeof attributes.action === 'string' ? attributes.action : '';
  const event: ForgeEvent = {
    kind: classified.kind,
    // The Gitea spelling of comment actions, which the rest of baton reads (`created`, `edited`).
    action: action === 'create' ? 'created' : action === 'update' && classified.kind.endsWith('comment') ? 'edited' : action,
    event: classified.event,
    forge: 'gitlab',
    owner,
    repo,
    sender,
    labels: [],
    isPull: false,
    merged: false,
  };
  let labelsKnown = false;
  const item = classified.event.includes('Note')
    ? isObject(payload.issue)
      ? { what: 'issue', value: payload.issue }
      : isObject(payload.merge_request)
        ? { what: 'merge_request', value: payload.merge_request }
        : undefined
    : classified.event === 'Push Hook'
      ? undefined
      : { what: 'object_attributes', value: attributes };
  if (item) {
    const value = item.value;
    const isPull = item.what === 'merge_request' || classified.event === 'Merge Request Hook';
    event.isPull = isPull;
    event.number = positiveInt(value.iid, `${item.what}.iid`);
    event.state = state(value.state, `${item.what}.state`);
    event.merged = value.state === 'merged';
    // The labels after the change: `changes.labels.current` on an update, else the item's own.
    const changes = isObject(payload.changes) && isObject(payload.changes.labels) ? payload.changes.labels : undefined;
    const labels =
      item.what === 'object_attributes'
        ? labelsOf(changes?.current ?? payload.labels ?? value.labels, 'labels')
        : labelsOf(value.labels, `${item.what}.labels`);
    labelsKnown = labels !== undefined;
    event.labels = labels ?? [];
    if (typeof value.title === 'string') event.title = value.title;
    const url = item.what === 'object_attributes' ? value.url : undefined;
    if (typeof url === 'string' && url) event.htmlUrl = url;
    if (isPull) {
      if (typeof value.source_branch === 'string' && value.source_branch) event.headRef = value.source_branch;
      const last = isObject(value.last_commit) ? value.last_commit : undefined;
      if (last && typeof last.id === 'string' && last.id) event.headSha = last.id;
    }
    if (classified.kind === 'issue_comment' || classified.kind === 'pr_comment') {
      const body = typeof attributes.note === 'string' ? attributes.note : '';
      event.comment = { body, author: sender };
      if (typeof attributes.id === 'number') event.comment.id = attributes.id;
      if (typeof attributes.url === 'string' && attributes.url) event.htmlUrl = attributes.url;
    }
    if (classified.kind === 'review') event.review = { state: classified.review ?? 'comment', body: '' };
  } else if (classified.kind === 'push') {
    if (typeof payload.ref === 'string') event.ref = payload.ref;
  }
  return { event, labelsKnown };
}

/** The issue or merge request a payload is about, for ordering (label memory depends on order). */
export function gitLabNumberOf(payload: Json): number | null {
  const candidates = [
    isObject(payload.issue) ? payload.issue.iid : undefined,
    isObject(payload.merge_request) ? payload.merge_request.iid : undefined,
    isObject(payload.object_attributes) && payload.object_kind !== 'note' ? payload.object_attributes.iid : undefined,
  ];
  return candidates.find((n): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n > 0) ?? null;
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function object(parent: Json, key: string, path: string): Json {
  const value = parent[key];
  if (value === undefined || value === null) throw new HttpError(400, 'bad_request', `missing ${path}`);
  if (!isObject(value)) throw new HttpError(400, 'bad_request', `${path} must be an object`);
  return value;
}

function string(parent: Json, key: string, path: string): string {
  const value = parent[key];
  if (value === undefined || value === null || value === '') throw new HttpError(400, 'bad_request', `missing ${path}`);
  if (typeof value !== 'string') throw new HttpError(400, 'bad_request', `${path} must be a string`);
  return value;
}

function positiveInt(value: unknown, path: string): number {
  if (value === undefined || value === null) throw new HttpError(400, 'bad_request', `missing ${path}`);
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new HttpError(400, 'bad_request', `${path} must be a positive whole number`);
  }
  return value;
}

function state(value: unknown, path: string): 'open' | 'closed' {
  if (value === 'opened' || value === 'locked') return 'open';
  if (value === 'closed' || value === 'merged') return 'closed';
  if (value === undefined || value === null) throw new HttpError(400, 'bad_request', `missing ${path}`);
  throw new HttpError(400, 'bad_request', `${path} must be "opened", "closed", "merged" or "locked"`);
}

/** GitLab's labels are `{ title }` in webhooks. */
function labelsOf(value: unknown, path: string): string[] | undefined {
  if (value === undefined) return undefined;
  if (value === null) return [];
  if (!Array.isArray(value)) throw new HttpError(400, 'bad_request', `${path} must be a list`);
  return value.flatMap((label) => (isObject(label) && typeof label.title === 'string' && label.title !== '' ? [label.title] : []));
}
