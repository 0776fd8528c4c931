import { syncEndpoint, type NewDelivery } from '../ingress/index.js';
import { forgeRepository, type ForgeName } from '../runs/index.js';
import type { CatchupItem, PlannedEvent } from './plan.js';

/** The endpoint name catch-up's deliveries carry (no webhook path delivered them). */
export const SYNC_ENDPOINT = 'sync';

/**
 * A planned event as the Gitea webhook that would have carried it (reference/gitea/WEBHOOKS.md:
 * `issue_label` / `pull_request_label` with action `label_updated`, `issues` and `pull_request`
 * `opened`, `pull_request_sync` `synchronized`, `issue_comment` / `pull_request_comment`
 * `created`, `pull_request_review_*` `reviewed`), so the inbox worker reads it exactly as it reads a real
 * delivery: the same parsing, routing, permission rule, label memory and dedup. The body holds
 * only what the forge's API said and is built the same way every time, so catching up on the
 * same fact twice (a pass retried after a failure) stores the same body, which the inbox's
 * dedup on the body's hash then drops. It names no clone URL: runs clone from GITEA_URL.
 *
 * GitHub's and GitLab's are Gitea-shaped too: their endpoint (`sync:github`) tells the worker
 * which forge they are of, and their repository is named with it.
 */
export function syntheticDelivery(
  owner: string,
  repo: string,
  item: CatchupItem,
  event: PlannedEvent,
  forge: ForgeName = 'gitea',
): NewDelivery {
  const repository = { name: repo, full_name: `${owner}/${repo}`, owner: { login: owner } };
  const sender = { login: event.sender };
  const common = {
    number: item.number,
    repository,
    sender,
    baton_sync: {
      entry: event.entryId ?? null,
      // The fact's own time where it has one, so a later pass that finds the same fact makes the same body.
      updated_at:
        event.comment?.createdAt ??
        event.review?.submittedAt ??
        (event.kind === 'opened' && !item.isPull ? item.createdAt : item.updatedAt),
      // Another forge's namesake repository must not make the same body (the inbox dedups on it).
      ...(forge === 'gitea' || forge === 'forgejo' ? {} : { forge }),
    },
  };
  const subject = {
    number: item.number,
    title: item.title,
    html_url: item.htmlUrl,
    state: item.state,
    user: { login: item.author },
    labels: event.labels.map((name) => ({ name })),
    created_at: item.createdAt,
    updated_at: item.updatedAt,
  };
  let eventType: string;
  let coarse: string = item.isPull ? 'pull_request' : 'issues';
  let payload: Record<string, unknown>;
  const pullMeta = { merged: item.merged };
  if (event.kind === 'comment' && event.comment) {
    // IssueCommentPayload (reference/gitea/WEBHOOKS.md §3): X-Gitea-Event issue_comment for both,
    // the type pull_request_comment on a pull request.
    const c = event.comment;
    coarse = 'issue_comment';
    eventType = item.isPull ? 'pull_request_comment' : 'issue_comment';
    payload = {
      action: 'created',
      ...common,
      issue: { ...subject, pull_request: item.isPull ? pullMeta : null },
      comment: {
        id: c.id,
        body: c.body,
        user: { login: c.user.login },
        html_url: c.htmlUrl,
        created_at: c.createdAt,
        updated_at: c.updatedAt,
      },
      is_pull: item.isPull,
    };
  } else if (event.kind === 'review' && event.review) {
    // PullRequestPayload + ReviewPayload (WEBHOOKS.md §4): X-Gitea-Event pull_request_{approved,
    // rejected,comment}, the type pull_request_review_…, action reviewed, the head it was given on.
    const r = event.review;
    coarse = `pull_request_${r.state}`;
    eventType = `pull_request_review_${r.state}`;
    const pullRequest = { ...subject, merged: item.merged, head: { ref: item.head?.ref ?? '', sha: r.commitId } };
    payload = {
      action: 'reviewed',
      ...common,
      pull_request: pullRequest,
      requested_reviewer: sender,
      review: { type: eventType, content: r.body },
    };
  } else if (!item.isPull) {
    eventType = event.kind === 'opened' ? 'issues' : 'issue_label';
    payload = { action: event.kind === 'opened' ? 'opened' : 'label_updated', ...common, issue: { ...subject, pull_request: null } };
  } else {
    const pullRequest = { ...subject, merged: item.merged, head: { ref: item.head?.ref ?? '', sha: item.head?.sha ?? '' } };
    const actions = { labels: 'label_updated', opened: 'opened', synchronized: 'synchronized' } as const;
    const kind = event.kind as keyof typeof actions;
    eventType = { labels: 'pull_request_label', opened: 'pull_request', synchronized: 'pull_request_sync' }[kind];
    payload = { action: actions[kind], ...common, pull_request: pullRequest };
  }
  return {
    source: 'sync',
    endpoint: forge === 'gitea' || forge === 'forgejo' ? SYNC_ENDPOINT : syncEndpoint(forge),
    deliveryId: null,
    event: coarse,
    eventType,
    headers: { 'x-gitea-event': coarse, 'x-gitea-event-type': eventType },
    body: JSON.stringify(payload),
    repository: forgeRepository(forge, owner, repo),
    number: item.number,
  };
}
