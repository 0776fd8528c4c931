import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { classifyGitLab } from '../../../src/ingress/gitlab/normalize.js';
import { until } from '../../helpers/until.js';
import { createFakeGitLab, type FakeGitLab } from './index.js';

/**
 * "Request changes" on the fake GitLab as GitLab does it (sources in app.ts beside the endpoint):
 * `POST …/draft_notes/bulk_publish` with `reviewer_state`, 204 whatever came of it, the Merge
 * Request Hook `update` with `changes.reviewers` when the state changed, and baton's ingress
 * reading that hook as a changes-requested review by its sender.
 */
describe('fake GitLab: a reviewer state set by publishing a review', () => {
  let gitlab: FakeGitLab;
  let receiver: http.Server;
  let received: { event: string; body: Record<string, unknown> }[];
  let review = '';
  let dev = '';

  beforeEach(async () => {
    received = [];
    receiver = http.createServer((req, res) => {
      let text = '';
      req.on('data', (chunk: Buffer) => (text += chunk.toString()));
      req.on('end', () => {
        received.push({ event: String(req.headers['x-gitlab-event']), body: JSON.parse(text) as Record<string, unknown> });
        res.writeHead(200).end('{}');
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    gitlab = await createFakeGitLab();
    review = gitlab.addUser('claude-review').token;
    dev = gitlab.addUser('claude-dev').token;
    gitlab.addUser('root');
    gitlab.addProject('acme', 'app');
    for (const user of ['claude-review', 'claude-dev']) gitlab.setAccess('acme', 'app', user, 30);
    gitlab.setAccess('acme', 'app', 'root', 40);
    gitlab.addMergeRequest('acme', 'app', { title: 'Add login', author: 'claude-dev', source: 'feature/issue-3-login', target: 'main' });
    gitlab.state.project('acme/app')!.hooks.push({
      id: gitlab.state.id(),
      url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/`,
      token: 'secret',
      flags: { merge_requests_events: true },
      branchFilter: '',
      alertStatus: 'executable',
      failures: 0,
      uuid: 'hook-uuid',
    });
  });
  afterEach(async () => {
    await gitlab.close();
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
  });

  const publish = (token: string, body: unknown, iid = 1) =>
    fetch(`${gitlab.apiUrl}/projects/acme%2Fapp/merge_requests/${iid}/draft_notes/bulk_publish`, {
      method: 'POST',
      headers: { 'private-token': token, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const systemNotes = () =>
    gitlab
      .item('acme', 'app', 1, 'pull')!
      .notes.filter((n) => n.system)
      .map((n) => `${n.author}: ${n.body}`);

  it('sets a reviewer’s requested_changes, answers 204, and sends the update hook that baton reads as a rejected review', async () => {
    gitlab.addReviewer('acme', 'app', 1, 'claude-review');
    const res = await publish(review, { reviewer_state: 'requested_changes', note: 'Please add a test.' });
    expect(res.status).toBe(204);
    expect(await res.text()).toBe('');
    expect(gitlab.reviewers('acme', 'app', 1)).toEqual([{ username: 'claude-review', state: 'requested_changes' }]);
    expect(gitlab.notes('acme', 'app', 1, 'pull').map((n) => [n.author, n.body])).toEqual([
      ['claude-review', 'Please add a test.'],
      ['claude-review', 'requested changes'],
    ]);
    const [hook] = await until(() => (received.length ? received : undefined), 'the merge request hook');
    expect(hook!.event).toBe('Merge Request Hook');
    expect(hook!.body).toMatchObject({
      object_kind: 'merge_request',
      user: { username: 'claude-review' },
      project: { path_with_namespace: 'acme/app' },
      object_attributes: { iid: 1, action: 'update', state: 'opened', source_branch: 'feature/issue-3-login' },
      changes: {
        reviewers: {
          previous: [expect.objectContaining({ username: 'claude-review', state: 'unreviewed', re_requested: false })],
          current: [expect.objectContaining({ username: 'claude-review', state: 'requested_changes', re_requested: false })],
        },
      },
      reviewers: [expect.objectContaining({ username: 'claude-review', state: 'requested_changes' })],
    });
    expect(classifyGitLab(hook!.event, hook!.body)).toEqual({ kind: 'review', event: 'Merge Request Hook', review: 'rejected' });
    // The merge request's API shows the reviewer and its state.
    const reviewers = await fetch(`${gitlab.apiUrl}/projects/acme%2Fapp/merge_requests/1/reviewers`, {
      headers: { 'private-token': review },
    });
    expect(await reviewers.json()).toEqual([
      expect.objectContaining({ user: expect.objectContaining({ username: 'claude-review' }), state: 'requested_changes' }),
    ]);
  });

  it('from approved: takes the approval back with no unapproval hook, the update its only one', async () => {
    gitlab.addReviewer('acme', 'app', 1, 'claude-review');
    gitlab.item('acme', 'app', 1, 'pull')!.mr!.reviewers[0]!.state = 'approved';
    gitlab.approve('acme', 'app', 1, 'claude-review');
    expect((await publish(review, { reviewer_state: 'requested_changes' })).status).toBe(204);
    expect(gitlab.item('acme', 'app', 1, 'pull')!.mr!.approvedBy).toEqual([]);
    const hooks = await until(() => (received.length ? received : undefined), 'the merge request hook');
    const changes = hooks[0]!.body.changes as { reviewers: { previous: { state: string }[] } };
    expect(changes.reviewers.previous[0]!.state).toBe('approved');
    expect(classifyGitLab(hooks[0]!.event, hooks[0]!.body)).toMatchObject({ kind: 'review', review: 'rejected' });
    // Published again: nothing changed, so the hook carries no reviewers' change and is no second review.
    expect((await publish(review, { reviewer_state: 'requested_changes' })).status).toBe(204);
    await until(() => (received.length === 2 ? received : undefined), 'the second hook');
    expect(received[1]!.body.changes).toEqual({});
    expect(classifyGitLab(received[1]!.event, received[1]!.body)).toMatchObject({ kind: 'pr_edited' });
  });

  it('sets nothing for an account that is no reviewer (still 204, the system note written), unless GitLab makes it one on submission', async () => {
    expect((await publish(review, { reviewer_state: 'requested_changes' })).status).toBe(204);
    expect(gitlab.reviewers('acme', 'app', 1)).toEqual([]);
    expect(systemNotes()).toEqual(['claude-review: requested changes']);
    gitlab.state.features.assignReviewerOnSubmission = true;
    // Never the author, though.
    expect((await publish(dev, { reviewer_state: 'requested_changes' })).status).toBe(204);
    expect(gitlab.reviewers('acme', 'app', 1)).toEqual([]);
    expect((await publish(review, { reviewer_state: 'requested_changes' })).status).toBe(204);
    expect(gitlab.reviewers('acme', 'app', 1)).toEqual([{ username: 'claude-review', state: 'requested_changes' }]);
    const [hook] = await until(() => (received.length ? received : undefined), 'the merge request hook');
    expect(hook!.body.changes).toMatchObject({
      reviewers: { previous: [], current: [expect.objectContaining({ username: 'claude-review' })] },
    });
  });

  it('refuses a state GitLab does not take (400), and answers 404 for a merge request it does not have', async () => {
    const bad = await publish(review, { reviewer_state: 'approved' });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({ error: 'reviewer_state does not have a valid value' });
    expect((await publish(review, { reviewer_state: 'requested_changes' }, 9)).status).toBe(404);
    expect((await publish('glpat-unknown', {})).status).toBe(401);
  });
});
