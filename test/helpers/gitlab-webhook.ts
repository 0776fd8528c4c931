import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import type { FakeGitLab } from '../fakes/gitlab/index.js';

/** The example bodies of GitLab's webhook documentation (test/fixtures/gitlab/README.md: source and licence). */
export type GitLabExample = 'issue' | 'note-issue' | 'note-merge-request' | 'merge-request';

/** The `X-Gitlab-Event` each example is documented with. */
export const GITLAB_EVENT_OF: Record<GitLabExample, string> = {
  issue: 'Issue Hook',
  'note-issue': 'Note Hook',
  'note-merge-request': 'Note Hook',
  'merge-request': 'Merge Request Hook',
};

/** A deep copy of one documented example body, free to change. */
export function gitlabExample(name: GitLabExample): Record<string, unknown> {
  const file = new URL(`../fixtures/gitlab/${name}.json`, import.meta.url);
  return JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
}

/**
 * The headers GitLab sends with a delivery (docs.gitlab.com, "Webhooks", delivery headers):
 * the event, the hook's secret token as is, a UUID per event, one per hook, the instance, and
 * `Idempotency-Key`, which stays the same when the delivery is retried or resent.
 */
export function gitlabHeaders(options: {
  event: string;
  token?: string;
  idempotencyKey?: string | null;
  eventUuid?: string;
}): Record<string, string> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': 'GitLab/17.6.0',
    'x-gitlab-event': options.event,
    'x-gitlab-instance': 'https://gitlab.example.com',
    'x-gitlab-webhook-uuid': '9a4ed4c6-9c1c-4d6f-9c55-1b6a8c1f2e11',
    'x-gitlab-event-uuid': options.eventUuid ?? randomUUID(),
  };
  if (options.idempotencyKey !== null) headers['idempotency-key'] = options.idempotencyKey ?? randomUUID();
  if (options.token !== undefined) headers['x-gitlab-token'] = options.token;
  return headers;
}

/**
 * The project the examples are about on the fake GitLab (`<namespace>/gitlab-test`, default
 * branch `master`, as the examples name it), its repository served, with the two bots as
 * Developers and the examples' sender `root` a Maintainer, who may steer baton. Returns the bots.
 */
export function seedExampleProject(gitlab: FakeGitLab, namespace = 'gitlabhq'): { dev: { token: string }; review: { token: string } } {
  const dev = gitlab.addUser('claude-dev');
  const review = gitlab.addUser('claude-review');
  gitlab.addUser('root');
  gitlab.addProject(namespace, 'gitlab-test');
  gitlab.state.project(`${namespace}/gitlab-test`)!.defaultBranch = 'master';
  gitlab.gitRepo(namespace, 'gitlab-test');
  for (const user of ['claude-dev', 'claude-review']) gitlab.setAccess(namespace, 'gitlab-test', user, 30);
  gitlab.setAccess(namespace, 'gitlab-test', 'root', 40);
  return { dev, review };
}
