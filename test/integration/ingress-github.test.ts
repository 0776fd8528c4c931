import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { classifyGitHub, gitHubForgeEvent } from '../../src/ingress/github/index.js';
import { githubCorpus, githubExample, githubExamples, githubHeaders } from '../helpers/github-webhook.js';
import { createIngressHarness, type IngressHarness } from '../helpers/ingress.js';

const SECRET = 'github-webhook-secret';

/** What each action of the corpus must become (the event → pipeline kind rules). */
const KINDS: Record<string, Record<string, string>> = {
  issues: {
    opened: 'issue_opened',
    edited: 'issue_edited',
    closed: 'issue_closed',
    reopened: 'issue_reopened',
    labeled: 'issue_labels',
    unlabeled: 'issue_labels',
  },
  pull_request: {
    opened: 'pr_opened',
    synchronize: 'pr_synchronized',
    edited: 'pr_edited',
    closed: 'pr_closed',
    reopened: 'pr_reopened',
    labeled: 'pr_labels',
    unlabeled: 'pr_labels',
  },
};

describe('GitHub deliveries from the @octokit/webhooks-examples corpus', () => {
  it('maps every issues and pull_request example to its pipeline kind, and the rest to other', () => {
    let seen = 0;
    for (const event of ['issues', 'pull_request']) {
      for (const payload of githubExamples(event)) {
        const classified = classifyGitHub(event, payload);
        expect('kind' in classified && classified.kind, `${event}.${String(payload.action)}`).toBe(
          KINDS[event]![payload.action as string] ?? 'other',
        );
        if (!('kind' in classified)) continue;
        const { event: forgeEvent } = gitHubForgeEvent(classified, payload);
        const isPull = event === 'pull_request' || Boolean((payload.issue as { pull_request?: unknown }).pull_request);
        const repository = payload.repository as { name: string; owner: { login: string } };
        expect(forgeEvent).toMatchObject({ forge: 'github', owner: repository.owner.login, repo: repository.name, isPull });
        expect(forgeEvent.number).toBeGreaterThan(0);
        seen += 1;
      }
    }
    expect(seen).toBeGreaterThan(40);
  });

  it('reads a comment on a pull request as pr_comment and on an issue as issue_comment, with its author', () => {
    for (const payload of githubExamples('issue_comment')) {
      const classified = classifyGitHub('issue_comment', payload);
      const issue = payload.issue as { pull_request?: unknown };
      expect('kind' in classified && classified.kind).toBe(issue.pull_request ? 'pr_comment' : 'issue_comment');
      if (!('kind' in classified)) continue;
      const { event } = gitHubForgeEvent(classified, payload);
      const comment = payload.comment as { user: { login: string }; body: string };
      expect(event.comment).toMatchObject({ author: comment.user.login, body: comment.body });
    }
  });

  it('reads the review state of pull_request_review submitted; a dismissal starts nothing', () => {
    for (const payload of githubExamples('pull_request_review')) {
      const classified = classifyGitHub('pull_request_review', payload);
      const review = payload.review as { state: string };
      if (payload.action === 'submitted') {
        expect(classified).toMatchObject({
          kind: 'review',
          review: { commented: 'comment', approved: 'approved', changes_requested: 'rejected' }[review.state],
        });
      } else expect(classified).toMatchObject({ kind: 'other' });
    }
    // The corpus holds only commented reviews; GitHub's own value for a request for changes is
    // `changes_requested` (docs: pull_request_review, review.state).
    const asked = githubExample('pull_request_review', 'submitted');
    (asked.review as { state: string }).state = 'changes_requested';
    expect(classifyGitHub('pull_request_review', asked)).toMatchObject({ kind: 'review', review: 'rejected' });
  });

  it('takes the head of an opened pull request and never reads the payload’s clone URL', () => {
    const payload = githubExample('pull_request', 'synchronize');
    const classified = classifyGitHub('pull_request', payload);
    if (!('kind' in classified)) throw new Error('unsupported');
    const { event } = gitHubForgeEvent(classified, payload);
    const pull = payload.pull_request as { head: { sha: string; ref: string } };
    expect(event).toMatchObject({ kind: 'pr_synchronized', headSha: pull.head.sha, headRef: pull.head.ref });
    expect(JSON.stringify(event)).not.toContain('.git');
  });

  it('treats ping and the events baton does not act on as unsupported', () => {
    const names = githubCorpus().map((e) => e.name);
    for (const name of ['ping', 'installation', 'star', 'fork']) {
      if (!names.includes(name)) continue;
      expect(classifyGitHub(name, githubExample(name))).toEqual({ unsupported: name });
    }
  });
});

describe('POST /webhook/github', () => {
  let h: IngressHarness;
  beforeEach(async () => {
    h = await createIngressHarness({ githubSecret: SECRET });
  });
  afterEach(async () => {
    await h.cleanup();
  });

  const body = (payload: unknown) => JSON.stringify(payload);

  it('stores a signed issues.opened and starts fix-bug (it carries `bug`) under a key naming GitHub', async () => {
    const raw = body(githubExample('issues', 'opened'));
    const res = await h.post('/webhook/github', raw, githubHeaders(raw, { event: 'issues', secret: SECRET }));
    expect(res.status).toBe(202);
    expect(res.delivery).toMatchObject({ outcome: 'started', repository: 'github:codertocat/hello-world' });
    const runs = await h.runs.list();
    expect(runs.map((r) => [r.key, r.forge])).toEqual([['fix-bug:github:Codertocat/Hello-World#1', 'github']]);
  });

  it('refuses an unsigned delivery and a wrong signature, before reading the body', async () => {
    const raw = body(githubExample('issues', 'opened'));
    const unsigned = await h.post('/webhook/github', raw, githubHeaders(raw, { event: 'issues' }));
    expect(unsigned).toMatchObject({
      status: 401,
      body: { error: { message: 'missing signature: X-Hub-Signature-256 is required; see docs/troubleshooting.md#signature-failures' } },
    });
    const wrong = await h.post('/webhook/github', raw, githubHeaders(raw, { event: 'issues', secret: 'not-the-secret' }));
    expect(wrong).toMatchObject({
      status: 401,
      body: { error: { message: 'invalid signature; see docs/troubleshooting.md#signature-failures' } },
    });
    // Not even parsed: a body that is not JSON is refused for its signature, not its syntax.
    const junk = await h.post('/webhook/github', '{not json', githubHeaders('{not json', { event: 'issues', secret: 'nope' }));
    expect(junk.status).toBe(401);
    expect(await h.runs.list()).toEqual([]);
  });

  it('has one effect for a redelivery (same GUID and hook), and for the same event from a second hook', async () => {
    const raw = body(githubExample('issues', 'opened'));
    const first = await h.post(
      '/webhook/github',
      raw,
      githubHeaders(raw, { event: 'issues', secret: SECRET, delivery: 'guid-1', hookId: 1 }),
    );
    const again = await h.post(
      '/webhook/github',
      raw,
      githubHeaders(raw, { event: 'issues', secret: SECRET, delivery: 'guid-1', hookId: 1 }),
    );
    const otherHook = await h.post(
      '/webhook/github',
      raw,
      githubHeaders(raw, { event: 'issues', secret: SECRET, delivery: 'guid-1', hookId: 2 }),
    );
    expect(first.delivery).toMatchObject({ outcome: 'started', deliveryId: '1:guid-1' });
    expect(again.delivery).toMatchObject({ outcome: 'duplicate' });
    expect(otherHook.delivery).toMatchObject({ outcome: 'duplicate', deliveryId: '2:guid-1' });
    expect(await h.runs.list()).toHaveLength(1);
  });

  it('keeps GitHub’s label memory apart from Gitea’s for a repository of the same name', async () => {
    // The real `issues.labeled` body, its label renamed to a stage's (the corpus labels only `bug`).
    const labeled = githubExample('issues', 'labeled');
    const rename = (l: { name: string }) => ({ ...l, name: 'ready-for-development' });
    labeled.label = rename(labeled.label as { name: string });
    (labeled.issue as { labels: { name: string }[] }).labels = [rename({ name: 'x' })];
    const raw = body(labeled);
    const res = await h.post('/webhook/github', raw, githubHeaders(raw, { event: 'issues', secret: SECRET }));
    expect(res.delivery).toMatchObject({ outcome: 'started' });
    expect((await h.runs.list()).map((r) => r.key)).toEqual(['develop:github:Codertocat/Hello-World#1']);
  });

  it('ignores ping with a verdict', async () => {
    const raw = body(githubExample('ping'));
    const res = await h.post('/webhook/github', raw, githubHeaders(raw, { event: 'ping', secret: SECRET }));
    expect(res.delivery).toMatchObject({ outcome: 'ignored', verdict: 'ignored: unsupported event "ping"' });
  });
});
