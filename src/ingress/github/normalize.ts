import { HttpError } from '../../http/index.js';
import type { ForgeEvent, ForgeEventKind, ReviewState } from '../../pipeline/index.js';
import { FORGE_NAME_RULE, isForgeName } from '../../repositories/index.js';

type Json = Record<string, unknown>;

export type GitHubClassified = { kind: ForgeEventKind; event: string; review?: ReviewState } | { unsupported: string };

/**
 * GitHub's events (`X-GitHub-Event`) and actions as pipeline kinds. Sources: GitHub's "Webhook
 * events and payloads" page, and the bodies of `@octokit/webhooks-examples` (see SOURCES.md).
 *
 * - `issues` opened | edited | closed | reopened; labeled | unlabeled → `issue_labels` (the payload's
 *   `issue.labels` is the set after the change, compared with the label memory as on Gitea)
 * - `issue_comment` → `issue_comment`, or `pr_comment` when `issue.pull_request` is there
 * - `pull_request` opened | synchronize (a push to the head) | edited | closed | reopened;
 *   labeled | unlabeled → `pr_labels`
 * - `pull_request_review` submitted: `review.state` approved | changes_requested | commented
 * - `release`, `push`; every other event (ping, installation, …) is unsupported and ignored
 */
export function classifyGitHub(event: string, payload: Json): GitHubClassified {
  const name = event.toLowerCase();
  const action = typeof payload.action === 'string' ? payload.action : '';
  const pick = (kinds: Record<string, ForgeEventKind>): GitHubClassified => ({ kind: kinds[action] ?? 'other', event: name });
  switch (name) {
    case 'issues':
      return pick({
        opened: 'issue_opened',
        edited: 'issue_edited',
        closed: 'issue_closed',
        reopened: 'issue_reopened',
        labeled: 'issue_labels',
        unlabeled: 'issue_labels',
      });
    case 'issue_comment': {
      const issue = isObject(payload.issue) ? payload.issue : {};
      return { kind: isObject(issue.pull_request) ? 'pr_comment' : 'issue_comment', event: name };
    }
    case 'pull_request':
      return pick({
        opened: 'pr_opened',
        synchronize: 'pr_synchronized',
        edited: 'pr_edited',
        closed: 'pr_closed',
        reopened: 'pr_reopened',
        labeled: 'pr_labels',
        unlabeled: 'pr_labels',
      });
    case 'pull_request_review': {
      const state = isObject(payload.review) && typeof payload.review.state === 'string' ? payload.review.state.toLowerCase() : '';
      const review = ({ approved: 'approved', changes_requested: 'rejected', commented: 'comment' } as const)[state as 'approved'];
      if (action !== 'submitted' || review === undefined) return { kind: 'other', event: name };
      return { kind: 'review', event: name, review };
    }
    case 'release':
      return { kind: 'release', event: name };
    case 'push':
      return { kind: 'push', event: name };
    default:
      return { unsupported: name };
  }
}

/** Owner and name of the repository the payload is about; both must be names GitHub could have made. */
export function readGitHubRepository(payload: Json): { owner: string; repo: string } {
  const repository = object(payload, 'repository', 'repository');
  const owner = string(object(repository, 'owner', 'repository.owner'), 'login', 'repository.owner.login');
  const repo = string(repository, 'name', 'repository.name');
  for (const [path, name] of [
    ['repository.owner.login', owner],
    ['repository.name', repo],
  ] as const) {
    if (!isForgeName(name)) throw new HttpError(400, 'bad_request', `${path} is not a repository name: ${FORGE_NAME_RULE}`);
  }
  return { owner, repo };
}

/**
 * Builds the ForgeEvent of a GitHub delivery. Throws HttpError(400) naming the first missing or
 * mistyped field the rules need. Nothing of `repository` but its names is read: its `clone_url`
 * is the sender's to write, and baton clones from GITHUB_URL only.
 */
export function gitHubForgeEvent(
  classified: { kind: ForgeEventKind; event: string; review?: ReviewState },
  payload: Json,
): { event: ForgeEvent; labelsKnown: boolean } {
  const { owner, repo } = readGitHubRepository(payload);
  const sender = string(object(payload, 'sender', 'sender'), 'login', 'sender.login');
  const event: ForgeEvent = {
    kind: classified.kind,
    action: typeof payload.action === 'string' ? payload.action : '',
    event: classified.event,
    forge: 'github',
    owner,
    repo,
    sender,
    labels: [],
    isPull: false,
    merged: false,
  };
  let labelsKnown = false;
  if (isObject(payload.issue)) {
    const issue = payload.issue;
    event.number = positiveInt(issue.number, 'issue.number');
    // `pinned` and `unpinned` send an issue without state or labels (a corpus quirk): read as other.
    if (issue.state !== undefined || classified.kind !== 'other') event.state = state(issue.state, 'issue.state');
    const labels = labelsOf(issue.labels, 'issue.labels');
    labelsKnown = labels !== undefined;
    event.labels = labels ?? [];
    event.isPull = isObject(issue.pull_request);
    event.merged = isObject(issue.pull_request) && typeof issue.pull_request.merged_at === 'string';
    setText(event, issue);
    if (classified.kind === 'issue_comment' || classified.kind === 'pr_comment') {
      const comment = object(payload, 'comment', 'comment');
      const author = isObject(comment.user) && typeof comment.user.login === 'string' ? comment.user.login : sender;
      event.comment = { body: typeof comment.body === 'string' ? comment.body : '', author };
      if (typeof comment.id === 'number') event.comment.id = comment.id;
    }
  } else if (isObject(payload.pull_request)) {
    const pull = payload.pull_request;
    event.number = positiveInt(pull.number ?? payload.number, 'pull_request.number');
    if (pull.state !== undefined || classified.kind !== 'other') event.state = state(pull.state, 'pull_request.state');
    const labels = labelsOf(pull.labels, 'pull_request.labels');
    labelsKnown = labels !== undefined;
    event.labels = labels ?? [];
    event.isPull = true;
    event.merged = pull.merged === true;
    setText(event, pull);
    if (isObject(pull.head)) {
      if (typeof pull.head.ref === 'string' && pull.head.ref) event.headRef = pull.head.ref;
      if (typeof pull.head.sha === 'string' && pull.head.sha) event.headSha = pull.head.sha;
    }
    if (classified.kind === 'review') {
      const review = isObject(payload.review) ? payload.review : {};
      event.review = { state: classified.review ?? 'comment', body: typeof review.body === 'string' ? review.body : '' };
    }
  } else if (classified.kind === 'release') {
    const release = isObject(payload.release) ? payload.release : {};
    if (typeof release.tag_name === 'string') event.ref = release.tag_name;
  } else if (classified.kind === 'push') {
    if (typeof payload.ref === 'string') event.ref = payload.ref;
  }
  return { event, labelsKnown };
}

/** The issue or pull request a payload is about, for ordering (label memory depends on order). */
export function gitHubNumberOf(payload: Json): number | null {
  const candidates = [
    isObject(payload.issue) ? payload.issue.number : undefined,
    isObject(payload.pull_request) ? payload.pull_request.number : undefined,
    payload.number,
  ];
  return candidates.find((n): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n > 0) ?? null;
}

function setText(event: ForgeEvent, item: Json): void {
  if (typeof item.title === 'string') event.title = item.title;
  if (typeof item.html_url === 'string' && item.html_url) event.htmlUrl = item.html_url;
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
  if (value === undefined || value === null) throw new HttpError(400, 'bad_request', `missing ${path}`);
  if (value !== 'open' && value !== 'closed') throw new HttpError(400, 'bad_request', `${path} must be "open" or "closed"`);
  return value;
}

function labelsOf(value: unknown, path: string): string[] | undefined {
  if (value === undefined) return undefined;
  if (value === null) return [];
  if (!Array.isArray(value)) throw new HttpError(400, 'bad_request', `${path} must be a list`);
  return value.flatMap((label) => (isObject(label) && typeof label.name === 'string' && label.name !== '' ? [label.name] : []));
}
