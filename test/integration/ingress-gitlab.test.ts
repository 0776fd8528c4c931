import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { classifyGitLab, gitLabForgeEvent } from '../../src/ingress/gitlab/index.js';
import { GITLAB_EVENT_OF, gitlabExample, gitlabHeaders, type GitLabExample } from '../helpers/gitlab-webhook.js';
import { createIngressHarness, type IngressHarness } from '../helpers/ingress.js';

const SECRET = 'gitlab-webhook-secret';

/** A documented example with its action set to another one the page lists (the page has one example per event). */
function withAction(name: GitLabExample, action: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const payload = gitlabExample(name);
  Object.assign(payload.object_attributes as Record<string, unknown>, { action, ...extra });
  return payload;
}

function forgeEventOf(name: string, payload: Record<string, unknown>) {
  const classified = classifyGitLab(name, payload);
  if (!('kind' in classified)) throw new Error(`unsupported: ${classified.unsupported}`);
  return gitLabForgeEvent(classified, payload);
}

describe('GitLab deliveries from the webhook documentation’s examples', () => {
  it('reads the Issue Hook example: an opened issue of gitlabhq/gitlab-test, its labels after the change', () => {
    const { event, labelsKnown } = forgeEventOf('Issue Hook', gitlabExample('issue'));
    expect(event).toMatchObject({
      kind: 'issue_opened',
      forge: 'gitlab',
      owner: 'gitlabhq',
      repo: 'gitlab-test',
      number: 23,
      state: 'open',
      sender: 'root',
      isPull: false,
      title: 'New API: create/update/delete file',
      // `changes.labels.current`: the set after the change.
      labels: ['Platform'],
    });
    expect(labelsKnown).toBe(true);
  });

  it('maps each documented issue action, an update carrying changes.labels to a label change', () => {
    const kinds: Record<string, string> = { open: 'issue_opened', close: 'issue_closed', reopen: 'issue_reopened', update: 'issue_labels' };
    for (const [action, kind] of Object.entries(kinds)) {
      expect(classifyGitLab('Issue Hook', withAction('issue', action)), action).toMatchObject({ kind });
    }
    const edited = withAction('issue', 'update');
    delete (edited.changes as Record<string, unknown>).labels;
    expect(classifyGitLab('Issue Hook', edited)).toMatchObject({ kind: 'issue_edited' });
    expect(classifyGitLab('Confidential Issue Hook', withAction('issue', 'open'))).toMatchObject({ kind: 'issue_opened' });
  });

  it('reads a note on an issue and on a merge request with its author, body and number', () => {
    const onIssue = forgeEventOf('Note Hook', gitlabExample('note-issue')).event;
    expect(onIssue).toMatchObject({
      kind: 'issue_comment',
      action: 'created',
      owner: 'gitlab-org',
      repo: 'gitlab-test',
      number: 17,
      state: 'closed',
      isPull: false,
      labels: ['Afterpod', 'Element'],
      comment: { id: 1241, body: 'Hello world', author: 'root' },
    });
    const onMr = forgeEventOf('Note Hook', gitlabExample('note-merge-request')).event;
    expect(onMr).toMatchObject({
      kind: 'pr_comment',
      number: 1,
      isPull: true,
      headRef: 'master',
      headSha: '562e173be03b8ff2efb05345d12df18815438a4b',
      comment: { id: 1244, body: 'This MR needs work.', author: 'root' },
    });
  });

  it('maps the merge request actions: open, update with new commits (oldrev) as a push, approval and unapproval as reviews', () => {
    expect(forgeEventOf('Merge Request Hook', gitlabExample('merge-request')).event).toMatchObject({
      kind: 'pr_opened',
      number: 1,
      isPull: true,
      headRef: 'ms-viewport',
      headSha: 'da1560886d4f094c3e6c9ef40349f7d38b5d27d7',
      state: 'open',
    });
    const pushed = withAction('merge-request', 'update', { oldrev: '95790bf891e76fee5e1747ab589903a6a1f80f22' });
    expect(classifyGitLab('Merge Request Hook', pushed)).toMatchObject({ kind: 'pr_synchronized' });
    // The example's update carries changes.labels.
    expect(classifyGitLab('Merge Request Hook', withAction('merge-request', 'update'))).toMatchObject({ kind: 'pr_labels' });
    expect(classifyGitLab('Merge Request Hook', withAction('merge-request', 'approval'))).toEqual({
      kind: 'review',
      event: 'Merge Request Hook',
      review: 'approved',
    });
    expect(classifyGitLab('Merge Request Hook', withAction('merge-request', 'unapproval'))).toMatchObject({
      kind: 'review',
      review: 'rejected',
    });
    // The all-approvals-met pair follows an individual one: one click, one review.
    for (const action of ['approved', 'unapproved']) {
      expect(classifyGitLab('Merge Request Hook', withAction('merge-request', action))).toMatchObject({ kind: 'other' });
    }
    // "Request changes": GitLab's docs give no example of this update, so changes.reviewers follows
    // the payload captured in client-go MR !2984 (reviewer entries with username and state).
    const reviewed = (previous: string, current: string, username = 'root') => {
      const payload = withAction('merge-request', 'update');
      const entry = (state: string) => [{ id: 1, name: 'Administrator', username, state, re_requested: false }];
      payload.changes = { reviewers: { previous: entry(previous), current: entry(current) } };
      return payload;
    };
    expect(classifyGitLab('Merge Request Hook', reviewed('unreviewed', 'requested_changes'))).toEqual({
      kind: 'review',
      event: 'Merge Request Hook',
      review: 'rejected',
    });
    expect(forgeEventOf('Merge Request Hook', reviewed('unreviewed', 'requested_changes')).event).toMatchObject({
      kind: 'review',
      sender: 'root',
      number: 1,
      review: { state: 'rejected' },
    });
    // From approved too: GitLab takes the approval back with no unapproval hook of its own
    // (remove_approval's skip_notification), so this update is the review. Another user's entry is not the sender's review.
    expect(classifyGitLab('Merge Request Hook', reviewed('approved', 'requested_changes'))).toMatchObject({
      kind: 'review',
      review: 'rejected',
    });
    expect(classifyGitLab('Merge Request Hook', reviewed('requested_changes', 'requested_changes'))).toMatchObject({ kind: 'pr_edited' });
    // A review submitted with comments only ("Comment"): GitHub's commented review.
    expect(classifyGitLab('Merge Request Hook', reviewed('unreviewed', 'reviewed'))).toEqual({
      kind: 'review',
      event: 'Merge Request Hook',
      review: 'comment',
    });
    expect(classifyGitLab('Merge Request Hook', reviewed('reviewed', 'reviewed'))).toMatchObject({ kind: 'pr_edited' });
    // Asked for again (re-requested, unreviewed) or approved through this update: no review of its own here.
    expect(classifyGitLab('Merge Request Hook', reviewed('requested_changes', 'unreviewed'))).toMatchObject({ kind: 'pr_edited' });
    expect(classifyGitLab('Merge Request Hook', reviewed('unreviewed', 'requested_changes', 'user1'))).toMatchObject({ kind: 'pr_edited' });
    const merged = withAction('merge-request', 'merge', { state: 'merged' });
    expect(forgeEventOf('Merge Request Hook', merged).event).toMatchObject({ kind: 'pr_closed', merged: true, state: 'closed' });
  });

  it('never reads the payload’s clone URLs, and reads a project in a subgroup as its namespace and name', () => {
    const { event } = forgeEventOf('Merge Request Hook', gitlabExample('merge-request'));
    expect(JSON.stringify(event)).not.toContain('.git');
    // The documented example is a top-level project; GitLab writes a subgroup's full path here.
    const nested = gitlabExample('issue');
    (nested.project as Record<string, unknown>).path_with_namespace = 'group/sub/project';
    expect(forgeEventOf('Issue Hook', nested).event).toMatchObject({ owner: 'group/sub', repo: 'project' });
  });

  it.each([
    ['group//project', 'has an empty segment'],
    ['/project', 'has an empty segment'],
    ['group/', 'has an empty segment'],
    ['project', 'is not namespace/project'],
    ['group/../project', 'has a segment ".." that is not a GitLab path'],
    ['group/-sub/project', 'has a segment "-sub" that is not a GitLab path'],
    ['group/.sub/project', 'has a segment ".sub" that is not a GitLab path'],
    ['group/sub.git/project', 'has a segment "sub.git" ending in ".git" or ".atom"'],
    ['group/sub/project.atom', 'has a segment "project.atom" ending in ".git" or ".atom"'],
    ['group/sub./project', 'has a namespace segment "sub." ending in "."'],
    ['group/s%2Fb/project', 'has a segment "s%2Fb" that is not a GitLab path'],
    ['group/s b/project', 'has a segment "s b" that is not a GitLab path'],
    [`${Array.from({ length: 22 }, (_, i) => `g${i}`).join('/')}/project`, 'has 22 segments: a GitLab namespace has at most 21'],
  ])('refuses the project path %j with 400 naming the field', (path, problem) => {
    const bad = gitlabExample('issue');
    (bad.project as Record<string, unknown>).path_with_namespace = path;
    expect(() => forgeEventOf('Issue Hook', bad)).toThrow(`project.path_with_namespace ${problem}`);
  });

  it('treats the events baton does not act on as unsupported', () => {
    for (const name of ['Pipeline Hook', 'Job Hook', 'Wiki Page Hook', 'Tag Push Hook', 'Emoji Hook']) {
      expect(classifyGitLab(name, {})).toEqual({ unsupported: name });
    }
  });
});

describe('POST /webhook/gitlab', () => {
  let h: IngressHarness;
  beforeEach(async () => {
    h = await createIngressHarness({ gitlabSecret: SECRET });
  });
  afterEach(async () => {
    await h.cleanup();
  });

  const body = (payload: unknown) => JSON.stringify(payload);
  const headers = (name: GitLabExample, options: Partial<Parameters<typeof gitlabHeaders>[0]> = {}) =>
    gitlabHeaders({ event: GITLAB_EVENT_OF[name], token: SECRET, ...options });

  it('stores an issue with the right token and starts its stage under a key naming GitLab', async () => {
    const payload = gitlabExample('issue');
    // The documented issue, labelled with a stage's label.
    (payload.changes as { labels: { current: { title: string }[] } }).labels.current[0]!.title = 'bug';
    const res = await h.post('/webhook/gitlab', body(payload), headers('issue', { idempotencyKey: 'key-1' }));
    expect(res.status).toBe(202);
    expect(res.delivery).toMatchObject({ outcome: 'started', repository: 'gitlab:gitlabhq/gitlab-test', deliveryId: 'gitlab:key-1' });
    expect((await h.runs.list()).map((r) => [r.key, r.forge])).toEqual([['fix-bug:gitlab:gitlabhq/gitlab-test#23', 'gitlab']]);
  });

  it('refuses a missing or wrong token before reading the body, and everything without a configured secret', async () => {
    const raw = body(gitlabExample('issue'));
    const missing = await h.post('/webhook/gitlab', raw, gitlabHeaders({ event: 'Issue Hook' }));
    expect(missing).toMatchObject({
      status: 401,
      body: { error: { message: 'missing token: X-Gitlab-Token is required; see docs/troubleshooting.md#signature-failures' } },
    });
    const wrong = await h.post('/webhook/gitlab', raw, gitlabHeaders({ event: 'Issue Hook', token: `${SECRET}x` }));
    expect(wrong).toMatchObject({
      status: 401,
      body: { error: { message: 'invalid token; see docs/troubleshooting.md#signature-failures' } },
    });
    const junk = await h.post('/webhook/gitlab', '{not json', gitlabHeaders({ event: 'Issue Hook', token: 'nope' }));
    expect(junk.status).toBe(401);
    expect(await h.runs.list()).toEqual([]);
    const open = await createIngressHarness({ gitlabSecret: '' });
    try {
      const refused = await open.post('/webhook/gitlab', raw, gitlabHeaders({ event: 'Issue Hook', token: '' }));
      expect(refused.status).toBe(401);
    } finally {
      await open.cleanup();
    }
  });

  it('has one effect for a resend: the same Idempotency-Key under a new X-Gitlab-Event-UUID', async () => {
    const payload = withAction('merge-request', 'open');
    const raw = body(payload);
    const first = await h.post('/webhook/gitlab', raw, headers('merge-request', { idempotencyKey: 'idem-1', eventUuid: 'uuid-1' }));
    const resent = await h.post('/webhook/gitlab', raw, headers('merge-request', { idempotencyKey: 'idem-1', eventUuid: 'uuid-2' }));
    expect(first.delivery).toMatchObject({ outcome: 'started' });
    expect(resent.delivery).toMatchObject({ outcome: 'duplicate' });
    expect((await h.runs.list()).map((r) => r.key)).toEqual(['review-code:gitlab:gitlabhq/gitlab-test!1']);
  });

  it('falls back to X-Gitlab-Event-UUID where no Idempotency-Key is sent (GitLab before 17.4)', async () => {
    const raw = body(gitlabExample('note-issue'));
    const res = await h.post('/webhook/gitlab', raw, headers('note-issue', { idempotencyKey: null, eventUuid: 'uuid-9' }));
    expect(res.delivery).toMatchObject({ deliveryId: 'gitlab:uuid-9' });
  });

  it('keeps a merge request’s label memory apart from the issue of the same number', async () => {
    const issue = withAction('issue', 'update');
    (issue.object_attributes as Record<string, unknown>).iid = 1;
    (issue.changes as { labels: { current: { title: string }[] } }).labels.current[0]!.title = 'ready-for-development';
    const mr = withAction('merge-request', 'update');
    (mr.changes as { labels: { current: { title: string }[] } }).labels.current[0]!.title = 'ready-for-development';
    expect((await h.post('/webhook/gitlab', body(issue), headers('issue'))).delivery).toMatchObject({ outcome: 'started' });
    const onMr = await h.post('/webhook/gitlab', body(mr), headers('merge-request'));
    // The merge request's labels are compared with its own memory (empty), not the issue's.
    expect(onMr.delivery?.labelsBefore).toEqual([]);
  });
});
