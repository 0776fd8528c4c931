import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/index.js';
import { createFakeGitLab, type FakeGitLab } from '../fakes/gitlab/index.js';
import type { ServeHandle } from '../helpers/baton-bin.js';
import { acceptedDelivery } from '../helpers/deliveries.js';
import { startForgeServe, type ForgeServe } from '../helpers/forge-serve.js';
import { gitlabExample, gitlabHeaders, seedExampleProject } from '../helpers/gitlab-webhook.js';
import { until } from '../helpers/until.js';

/**
 * The review bot's own "Request changes" on GitLab, through the real `baton serve`: the documented
 * Merge Request Hook (merge request !1 of gitlabhq/gitlab-test opened by `root`) starts review-code;
 * its agent runs the built-in prompt's review step as the prompt wrote it (a note, then the review
 * account's reviewer state `requested_changes` through the forge gateway); the fake GitLab sets the
 * state and sends the Merge Request Hook `update` with `changes.reviewers` as GitLab does, to the
 * project's hook; baton reads it as the review bot's changes-requested review, which the pipeline's
 * `allowBots` lets start rework-pr: once, a resend of the hook a duplicate.
 */

const AGENT = fileURLToPath(new URL('../fakes/agent/prompt-agent.mjs', import.meta.url));
const SECRET = 'e2e-gitlab-review-bot-secret';
const NAMESPACE = 'gitlabhq';
const PROJECT = 'gitlab-test';
const TERMINAL = ['succeeded', 'failed', 'timed_out', 'cancelled', 'dead'];
const REVIEW = 'REQUEST_CHANGES\n\n1. `src/login.ts:12`: the password is logged; take it out.\n';

describe('the review bot asks for changes on GitLab, and rework-pr starts once, through baton serve', () => {
  let world: ForgeServe | undefined;
  let gitlab: FakeGitLab;
  let server: ServeHandle;
  let store: Store;

  beforeAll(async () => {
    gitlab = await createFakeGitLab();
    const { dev, review } = seedExampleProject(gitlab, NAMESPACE);
    // The example's merge request is `ms-viewport` into `master`.
    execFileSync('git', ['-C', gitlab.gitRepo(NAMESPACE, PROJECT), 'branch', 'ms-viewport', 'main']);
    for (const name of ['API', 'Platform']) gitlab.addLabel(NAMESPACE, PROJECT, name);
    gitlab.addMergeRequest(NAMESPACE, PROJECT, {
      title: 'MS-Viewport',
      author: 'root',
      source: 'ms-viewport',
      target: 'master',
      sha: 'da1560886d4f094c3e6c9ef40349f7d38b5d27d7',
    });
    // GitLab sets a reviewer state only for a reviewer of the merge request: nobody makes the
    // review bot one here, baton does when the review run is queued.

    world = await startForgeServe({
      name: 'gitlab-review-bot',
      readOnlyPaths: [path.dirname(AGENT)],
      // The review bot's own review may start rework (opt-in chaining, docs/pipeline.md).
      config: 'pipeline:\n  stages:\n    rework-pr:\n      triggers: [{ event: review_rejected, allowBots: true }]\n',
      env: {
        GITLAB_URL: gitlab.url,
        GITLAB_DEV_TOKEN: dev.token,
        GITLAB_REVIEW_TOKEN: review.token,
        GITLAB_WEBHOOK_SECRET: SECRET,
        BATON_AGENT_COMMAND: JSON.stringify([process.execPath, AGENT, '--steps', 'review', '--text', REVIEW]),
      },
    });
    ({ server, store } = world);
    // The project's hook, as `baton connect` makes it: GitLab itself delivers what the review does.
    gitlab.state.project(`${NAMESPACE}/${PROJECT}`)!.hooks.push({
      id: gitlab.state.id(),
      url: `${server.url}/webhook/gitlab`,
      token: SECRET,
      flags: { issues_events: true, merge_requests_events: true, note_events: true },
      branchFilter: '',
      alertStatus: 'executable',
      failures: 0,
      uuid: randomUUID(),
    });
  }, 60_000);

  afterAll(async () => {
    try {
      await world?.close();
    } finally {
      await gitlab?.close();
    }
  }, 60_000);

  const runs = () => store.db.selectFrom('runs').select(['id', 'key', 'stage', 'status', 'last_error', 'summary']).orderBy('id').execute();
  const finished = (id: number) =>
    until(async () => {
      const row = (await runs()).find((r) => r.id === id);
      return row && TERMINAL.includes(row.status) ? row : null;
    }, `run ${id} to finish`);

  it('sets the review account’s requested_changes on !1 and starts rework-pr from GitLab’s own hook, once', async () => {
    const body = JSON.stringify(gitlabExample('merge-request'));
    const headers = gitlabHeaders({ event: 'Merge Request Hook', token: SECRET });
    const res = await fetch(`${server.url}/webhook/gitlab`, { method: 'POST', headers, body });
    expect(res.status).toBe(202);
    const delivery = await acceptedDelivery(store, (await res.json()) as object, { body, headers });
    expect(delivery, String(delivery.verdict)).toMatchObject({ outcome: 'started', stages: ['review-code'] });
    const reviewRun = await finished(delivery.runIds[0]!);
    expect(reviewRun, `${reviewRun.last_error}\n${reviewRun.summary}\n${server.output()}`).toMatchObject({ status: 'succeeded' });

    // The review is a note of the review bot, and its verdict the reviewer state, set through the gateway.
    const note = gitlab.notes(NAMESPACE, PROJECT, 1, 'pull').find((n) => n.body.startsWith('REQUEST_CHANGES'));
    expect(note).toMatchObject({ author: 'claude-review', body: REVIEW });
    expect(gitlab.reviewers(NAMESPACE, PROJECT, 1)).toEqual([{ username: 'claude-review', state: 'requested_changes' }]);
    expect(gitlab.requests).toContain(`POST /api/v4/projects/${NAMESPACE}%2F${PROJECT}/merge_requests/1/draft_notes/bulk_publish`);
    // baton made the review bot a reviewer (the whole list, as GitLab's update takes it) when the run was queued.
    expect(gitlab.requests).toContain(`PUT /api/v4/projects/${NAMESPACE}%2F${PROJECT}/merge_requests/1`);

    // GitLab's hook of that change, delivered to baton, started rework-pr on !1 as the review bot's review.
    const project = gitlab.state.project(`${NAMESPACE}/${PROJECT}`)!;
    const hookEvent = await until(
      () => project.hookEvents.find((e) => e.event === 'Merge Request Hook' && e.body.includes('"requested_changes"')),
      'GitLab’s hook of the reviewer state',
    );
    expect(hookEvent.status).toBe(202);
    const rework = await until(async () => (await runs()).find((r) => r.stage === 'rework-pr'), 'rework-pr to start');
    expect(rework.key).toBe(`rework-pr:gitlab:${NAMESPACE}/${PROJECT}!1`);
    const inbox = await store.db
      .selectFrom('inbox_deliveries')
      .select(['outcome', 'delivery_id'])
      .where('delivery_id', '=', `gitlab:${hookEvent.idempotencyKey}`)
      .executeTakeFirstOrThrow();
    expect(inbox.outcome).toBe('started');

    // A resend from Recent events (the same Idempotency-Key) has no second effect.
    const deliveries = () =>
      store.db
        .selectFrom('inbox_deliveries')
        .select(['id', 'status', 'outcome'])
        .where('endpoint', '=', '/webhook/gitlab')
        .orderBy('id')
        .execute();
    const before = (await deliveries()).length;
    const resent = await gitlab.resend(NAMESPACE, PROJECT, hookEvent.id);
    expect(resent.status).toBe(202);
    expect(resent.headers['idempotency-key']).toBe(hookEvent.idempotencyKey);
    const copy = await until(async () => {
      const rows = await deliveries();
      return rows.length === before + 1 && rows.at(-1)!.status === 'processed' ? rows.at(-1) : undefined;
    }, 'the resend processed');
    expect(copy.outcome).toBe('duplicate');
    await finished(rework.id);
    expect((await runs()).filter((r) => r.stage === 'rework-pr')).toHaveLength(1);
  }, 180_000);
});
