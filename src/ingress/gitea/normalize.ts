import type { ForgeEvent, ForgeEventKind, ReviewState } from '../../pipeline/index.js';
import { HttpError } from '../../web-kit/index.js';
import { FORGE_NAME_RULE, gitLabProjectPathProblem, isForgeName } from '../../repositories/index.js';

type Json = Record<string, unknown>;

export type Classified = { kind: ForgeEventKind; event: string; review?: ReviewState } | { unsupported: string };

const ISSUE_EVENTS = ['issues', 'issue_assign', 'issue_label', 'issue_milestone'];
const PR_EVENTS = [
  'pull_request',
  'pull_request_assign',
  'pull_request_label',
  'pull_request_milestone',
  'pull_request_sync',
  'pull_request_review_request',
];
const LABEL_ACTIONS = ['label_updated', 'label_cleared', 'labeled', 'unlabeled'];

/**
 * Decides what kind of event a delivery is, from the headers and `action` (WEBHOOKS.md §3–§4).
 * Review submissions are recognised by `action: reviewed` plus `review.type` first, because Gitea
 * before 1.19.1 sent comment reviews as `issue_comment` / `pull_request_comment`.
 */
export function classify(headers: { event?: string; eventType?: string }, payload: Json): Classified {
  const name = (headers.eventType ?? headers.event ?? '').toLowerCase();
  const action = typeof payload.action === 'string' ? payload.action : '';
  const reviewType = isObject(payload.review) && typeof payload.review.type === 'string' ? payload.review.type : undefined;
  if (action === 'reviewed' && reviewType !== undefined) {
    const state = reviewStateOf(reviewType) ?? reviewStateOf(name) ?? 'comment';
    return { kind: 'review', event: name, review: state };
  }
  if (ISSUE_EVENTS.includes(name)) {
    if (name === 'issue_label' || LABEL_ACTIONS.includes(action)) return { kind: 'issue_labels', event: name };
    const kinds: Record<string, ForgeEventKind> = {
      opened: 'issue_opened',
      edited: 'issue_edited',
      closed: 'issue_closed',
      reopened: 'issue_reopened',
    };
    return { kind: (name === 'issues' && kinds[action]) || 'other', event: name };
  }
  if (name === 'issue_comment' || (name === 'pull_request_comment' && headers.eventType !== undefined)) {
    const issue = isObject(payload.issue) ? payload.issue : undefined;
    const isPull = payload.is_pull === true || (issue !== undefined && isObject(issue.pull_request));
    return { kind: isPull ? 'pr_comment' : 'issue_comment', event: name };
  }
  if (PR_EVENTS.includes(name)) {
    if (name === 'pull_request_sync' || action === 'synchronized') return { kind: 'pr_synchronized', event: name };
    if (name === 'pull_request_label' || LABEL_ACTIONS.includes(action)) return { kind: 'pr_labels', event: name };
    const kinds: Record<string, ForgeEventKind> = {
      opened: 'pr_opened',
      edited: 'pr_edited',
      closed: 'pr_closed',
      reopened: 'pr_reopened',
    };
    return { kind: (name === 'pull_request' && kinds[action]) || 'other', event: name };
  }
  // Review events named by the coarse header only (X-Gitea-Event): pull_request_comment here is a
  // review comment, not a conversation comment.
  const review = reviewStateOf(name);
  if (
    review &&
    (name.startsWith('pull_request_review_') ||
      name === 'pull_request_approved' ||
      name === 'pull_request_rejected' ||
      name === 'pull_request_comment')
  ) {
    return { kind: 'review', event: name, review };
  }
  if (name === 'release') return { kind: 'release', event: name };
  if (name === 'push') return { kind: 'push', event: name };
  return { unsupported: name };
}

function reviewStateOf(text: string): ReviewState | undefined {
  if (text.endsWith('approved')) return 'approved';
  if (text.endsWith('rejected')) return 'rejected';
  if (text.endsWith('comment')) return 'comment';
  return undefined;
}

/**
 * Owner and name of the repository a payload is about (needed before anything else). Both must
 * be names Gitea could have made (`isForgeName`): they become part of the URL baton clones from,
 * of the forge API paths it calls and of the run's key, so anything else is refused here. A
 * catch-up delivery of GitLab (`forge` `gitlab`: Gitea-shaped, src/catchup/synthesize.ts) names
 * a project whose owner is its namespace, subgroups included: GitLab's path rules apply to it.
 */
export function readRepository(payload: Json, forge?: ForgeEvent['forge']): { owner: string; repo: string } {
  const repository = object(payload, 'repository', 'repository');
  const owner = login(object(repository, 'owner', 'repository.owner'), 'repository.owner.login');
  const repo = string(repository, 'name', 'repository.name');
  if (forge === 'gitlab') {
    const problem = gitLabProjectPathProblem(`${owner}/${repo}`);
    if (problem) throw new HttpError(400, 'bad_request', `repository.owner.login/repository.name ${problem}`);
    return { owner, repo };
  }
  for (const [path, name] of [
    ['repository.owner.login', owner],
    ['repository.name', repo],
  ] as const) {
    if (!isForgeName(name)) throw new HttpError(400, 'bad_request', `${path} ${typeName(name)} is not a Gitea name: ${FORGE_NAME_RULE}`);
  }
  return { owner, repo };
}

/**
 * Builds the ForgeEvent. Throws HttpError(400) naming the first missing or mistyped field the
 * rules need; every other field is optional and unknown fields are ignored.
 */
export function toForgeEvent(
  classified: { kind: ForgeEventKind; event: string; review?: ReviewState },
  payload: Json,
  forge: ForgeEvent['forge'],
): { event: ForgeEvent; labelsKnown: boolean } {
  // Nothing else of `repository` is read: its clone_url (or html_url) is the sender's to write,
  // and baton clones only from GITEA_URL (src/server/workspaces.ts).
  const { owner, repo } = readRepository(payload, forge);
  const sender = login(object(payload, 'sender', 'sender'), 'sender.login');
  const event: ForgeEvent = {
    kind: classified.kind,
    action: typeof payload.action === 'string' ? payload.action : '',
    event: classified.event,
    forge,
    owner,
    repo,
    sender,
    labels: [],
    isPull: false,
    merged: false,
  };
  let labelsKnown = false;

  const kind = classified.kind;
  if (kind.startsWith('issue_') || kind === 'pr_comment' || (kind === 'other' && isObject(payload.issue))) {
    const issue = object(payload, 'issue', 'issue');
    event.number = positiveInt(issue.number, 'issue.number');
    event.state = state(issue.state, 'issue.state');
    const labels = labelsOf(issue.labels, 'issue.labels');
    labelsKnown = labels !== undefined;
    event.labels = labels ?? [];
    event.isPull = payload.is_pull === true || isObject(issue.pull_request) || kind === 'pr_comment';
    event.merged = isObject(issue.pull_request) && issue.pull_request.merged === true;
    setText(event, issue);
    if (kind === 'issue_comment' || kind === 'pr_comment') {
      const comment = object(payload, 'comment', 'comment');
      const body = comment.body === undefined || comment.body === null ? '' : string(comment, 'body', 'comment.body');
      const author = isObject(comment.user) ? (optionalString(comment.user.login) ?? optionalString(comment.user.username)) : undefined;
      event.comment = { body, author: author ?? sender };
      if (typeof comment.id === 'number') event.comment.id = comment.id;
    }
  } else if (kind.startsWith('pr_') || kind === 'review' || (kind === 'other' && isObject(payload.pull_request))) {
    const pull = object(payload, 'pull_request', 'pull_request');
    event.number = positiveInt(pull.number ?? payload.number, 'pull_request.number');
    event.state = state(pull.state, 'pull_request.state');
    const labels = labelsOf(pull.labels, 'pull_request.labels');
    labelsKnown = labels !== undefined;
    event.labels = labels ?? [];
    event.isPull = true;
    event.merged = pull.merged === true;
    setText(event, pull);
    if (isObject(pull.head)) {
      const ref = optionalString(pull.head.ref);
      if (ref) event.headRef = ref;
      const sha = optionalString(pull.head.sha);
      if (sha) event.headSha = sha;
    }
    if (kind === 'review') {
      const review = isObject(payload.review) ? payload.review : {};
      event.review = { state: classified.review ?? 'comment', body: optionalString(review.content) ?? '' };
    }
  } else if (kind === 'release') {
    const release = isObject(payload.release) ? payload.release : {};
    const tag = optionalString(release.tag_name);
    if (tag) event.ref = tag;
  } else if (kind === 'push') {
    const ref = optionalString(payload.ref);
    if (ref) event.ref = ref;
  }
  return { event, labelsKnown };
}

function setText(event: ForgeEvent, item: Json): void {
  const title = optionalString(item.title);
  if (title !== undefined) event.title = title;
  const htmlUrl = optionalString(item.html_url);
  if (htmlUrl) event.htmlUrl = htmlUrl;
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function missing(path: string): HttpError {
  return new HttpError(400, 'bad_request', `missing ${path}`);
}

function object(parent: Json, key: string, path: string): Json {
  const value = parent[key];
  if (value === undefined || value === null) throw missing(path);
  if (!isObject(value)) throw new HttpError(400, 'bad_request', `${path} must be an object, got ${typeName(value)}`);
  return value;
}

function string(parent: Json, key: string, path: string): string {
  const value = parent[key];
  if (value === undefined || value === null || value === '') throw missing(path);
  if (typeof value !== 'string') throw new HttpError(400, 'bad_request', `${path} must be a string, got ${typeName(value)}`);
  return value;
}

/** Gitea users carry `login`; payloads of old Gitea/Gogs sometimes only `username`. */
function login(user: Json, path: string): string {
  if (user.login === undefined || user.login === null || user.login === '') {
    if (typeof user.username === 'string' && user.username !== '') return user.username;
  }
  return string(user, 'login', path);
}

function optionalString(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function positiveInt(value: unknown, path: string): number {
  if (value === undefined || value === null) throw missing(path);
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new HttpError(400, 'bad_request', `${path} must be a positive whole number, got ${typeName(value)}`);
  }
  return value;
}

function state(value: unknown, path: string): 'open' | 'closed' {
  if (value === undefined || value === null) throw missing(path);
  if (value !== 'open' && value !== 'closed')
    throw new HttpError(400, 'bad_request', `${path} must be "open" or "closed", got ${typeName(value)}`);
  return value;
}

/** Label names, or undefined when the payload does not say (then nothing is remembered). */
function labelsOf(value: unknown, path: string): string[] | undefined {
  if (value === undefined) return undefined;
  if (value === null) return [];
  if (!Array.isArray(value)) throw new HttpError(400, 'bad_request', `${path} must be a list, got ${typeName(value)}`);
  return value.flatMap((label) => (isObject(label) && typeof label.name === 'string' && label.name !== '' ? [label.name] : []));
}

function typeName(value: unknown): string {
  if (Array.isArray(value)) return 'a list';
  if (value === null) return 'null';
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 37)}...` : value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return `an ${typeof value}`;
}
