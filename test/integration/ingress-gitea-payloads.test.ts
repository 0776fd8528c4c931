import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { signBody } from '../../src/ingress/index.js';
import { VECTOR_SECRET, giteaHeaders } from '../helpers/gitea-webhook.js';
import { createIngressHarness, type IngressHarness } from '../helpers/ingress.js';
import { describeWithReference } from '../helpers/reference.js';

/**
 * Every real Gitea capture in ../shared/reference/gitea/payloads, sent byte for byte with the
 * headers real Gitea sends for it (WEBHOOKS.md §1/§3) and signed with the test-vector secret.
 */
type Expected = { stage: string; owner: string; repo: string; number: number } | { ignored: string };

/** file → [X-Gitea-Event, X-Gitea-Event-Type, what baton does with it]. */
const CASES: Record<string, [string, string, Expected]> = {
  'gitea-issues-opened.json': ['issues', 'issues', { stage: 'analyse', owner: 'example', repo: 'example', number: 1 }],
  'gitea-issues-edited-DERIVED.json': ['issues', 'issues', { ignored: 'no trigger matches' }],
  'gitea-issues-closed.json': ['issues', 'issues', { ignored: 'closed issue' }],
  // Labels: [bug]; never seen before, so bug is new, but bug only matters when an issue is opened.
  'gitea-issues-label_updated.json': ['issues', 'issue_label', { ignored: 'no trigger matches' }],
  'gitea-issue_comment-created.json': [
    'issue_comment',
    'issue_comment',
    { stage: 'analyse', owner: 'example', repo: 'example', number: 1 },
  ],
  'gitea-issue_comment-edited.json': [
    'issue_comment',
    'issue_comment',
    { stage: 'analyse', owner: 'gogits', repo: 'hello-world', number: 1 },
  ],
  // A plain PR conversation comment: not an issue in analysis.
  'gitea-issue_comment-created-on-pull.json': ['issue_comment', 'pull_request_comment', { ignored: 'no trigger matches' }],
  'gitea-pull_request-opened.json': [
    'pull_request',
    'pull_request',
    { stage: 'review-code', owner: 'example', repo: 'example', number: 2 },
  ],
  'gitea-pull_request-edited.json': ['pull_request', 'pull_request', { ignored: 'no trigger matches' }],
  'gitea-pull_request-synchronized.json': [
    'pull_request',
    'pull_request_sync',
    { stage: 'review-code', owner: 'Test-CI', repo: 'multi-line-secrets', number: 2 },
  ],
  'gitea-pull_request-synchronized-legacy-2018.json': [
    'pull_request',
    'pull_request_sync',
    { stage: 'review-code', owner: 'jcitizen', repo: 'my-repo', number: 1 },
  ],
  'gitea-pull_request_label-label_updated.json': ['pull_request', 'pull_request_label', { ignored: 'no trigger matches' }],
  'gitea-pull_request_review-approved.json': [
    'pull_request_approved',
    'pull_request_review_approved',
    { stage: 'test', owner: 'a_nice_user', repo: 'hello_world_ci', number: 7 },
  ],
  'gitea-pull_request_review-rejected.json': [
    'pull_request_rejected',
    'pull_request_review_rejected',
    { stage: 'rework-pr', owner: 'a_nice_user', repo: 'hello_world_ci', number: 7 },
  ],
  'gitea-pull_request_review-comment.json': ['pull_request_comment', 'pull_request_review_comment', { ignored: 'no trigger matches' }],
  // Gitea < 1.19.1 sent comment reviews under the PR-comment hook type (WEBHOOKS.md §4).
  'gitea-pull_request_review-comment-legacy-pre1.19.json': ['issue_comment', 'pull_request_comment', { ignored: 'no trigger matches' }],
  'gitea-push.json': ['push', 'push', { ignored: 'no trigger matches' }],
  'gitea-release-published.json': ['release', 'release', { ignored: 'no trigger matches' }],
};

/** WEBHOOKS.md §2 test vectors. */
const VECTORS: Record<string, string> = {
  'gitea-issues-opened.json': '98c44fd0ae42ca4208eac6f81e59b436837740abc8693bf828366b32d33b1cbc',
  'gitea-issues-label_updated.json': '3611415860ed5904c87dd589a7c5fa7e87d2a72b0b2a92ea149ba9691ba8c785',
  'gitea-issue_comment-created.json': '690180a8c853460cba88f9b09911a531d449e9f63ed6b1ff0a0def3b972ca744',
  'gitea-issue_comment-created-on-pull.json': '8b38bf221adbaef2ce01cfa810c6d9cb977414fec306895973aea61e10e8d5a8',
  'gitea-pull_request-opened.json': '65c18a212efc7bde0f336acaec87f596fe20e80b2a0e7e51a790dd38393ff771',
  'gitea-push.json': '60fe446c74fa0cb9474f98cc557db79e10c7aaf22cf324ad65239600b9e4d915',
  'gitea-release-published.json': '847fcef001c2e59dadac3fa5fa01ca26c9985a5faa10e48a9868a8ad98e9dd18',
  'gitea-pull_request_review-comment-legacy-pre1.19.json': '5d5c315cc199807a23da81b788dcf7874299a223ba81fc77d76ab248fdab4d1c',
};

describeWithReference('gitea/payloads', 'Gitea reference payloads', (payloadsDir) => {
  const read = (file: string) => fs.readFileSync(path.join(payloadsDir, file));
  let h: IngressHarness | undefined;
  afterEach(async () => {
    await h?.cleanup();
    h = undefined;
  });

  it('covers every payload file in the reference directory', () => {
    const files = fs.readdirSync(payloadsDir).filter((f) => f.endsWith('.json'));
    expect(files.sort()).toEqual(Object.keys(CASES).sort());
  });

  it.each(Object.entries(VECTORS))('signs %s exactly like the WEBHOOKS.md test vector', (file, expected) => {
    expect(signBody(read(file), VECTOR_SECRET)).toBe(expected);
  });

  describe.each([
    { form: 'X-Gitea-Event + X-Gitea-Event-Type', coarseOnly: false, forgejo: false },
    { form: 'X-Gitea-Event only (no Event-Type)', coarseOnly: true, forgejo: false },
    { form: 'Forgejo headers too', coarseOnly: false, forgejo: true },
  ])('sent with $form', ({ coarseOnly, forgejo }) => {
    it.each(Object.entries(CASES))('%s', async (file, [event, eventType, expected]) => {
      h = await createIngressHarness({ secret: VECTOR_SECRET });
      const body = read(file);
      const headers = giteaHeaders(body, { event, eventType: coarseOnly ? undefined : eventType, secret: VECTOR_SECRET, forgejo });
      if (VECTORS[file]) expect(headers['X-Gitea-Signature']).toBe(VECTORS[file]);
      const res = await h.post('/webhook/gitea', body, headers);
      expect(res.status).toBe(202);
      if ('ignored' in expected) {
        expect(res.delivery).toMatchObject({ outcome: 'ignored', verdict: `ignored: ${expected.ignored}` });
        expect(await h.runs.list()).toEqual([]);
      } else {
        expect(res.delivery).toMatchObject({ outcome: 'started', stages: [expected.stage] });
        const run = await h.runs.get(res.delivery!.runIds[0]!);
        expect(run).toMatchObject({ ...expected, status: 'queued' });
        expect(run?.payload.forge).toBe(forgejo ? 'forgejo' : 'gitea');
      }
      // Redelivery of the same hook task, or Gitea's manual "Redeliver" (a new id), has no second effect.
      const again = await h.post('/webhook/gitea', body, headers);
      expect(again.delivery).toMatchObject({ outcome: 'duplicate', runIds: [] });
      const redelivered = { ...headers, 'X-Gitea-Delivery': 'manual-redelivery', 'X-Forgejo-Delivery': 'manual-redelivery' };
      expect((await h.post('/webhook/gitea', body, redelivered)).delivery).toMatchObject({ outcome: 'duplicate' });
      expect(await h.runs.list()).toHaveLength('ignored' in expected ? 0 : 1);
    });
  });

  it('tells review comments (current and pre-1.19 forms) apart from plain PR comments', async () => {
    // A stage listening to review comments and one listening to PR comments show which one each file is.
    h = await createIngressHarness({
      secret: VECTOR_SECRET,
      pipeline: {
        stages: {
          'answer-review': { account: 'dev', build: 'light', triggers: [{ event: 'review_comment' }] },
          'answer-comment': { account: 'dev', build: 'light', triggers: [{ event: 'pr_comment' }] },
        },
      },
    });
    const send = async (file: string) => {
      const [event, eventType] = CASES[file]!;
      const body = read(file);
      return (await h!.post('/webhook/gitea', body, giteaHeaders(body, { event, eventType, secret: VECTOR_SECRET }))).delivery;
    };
    expect(await send('gitea-pull_request_review-comment.json')).toMatchObject({ outcome: 'started', stages: ['answer-review'] });
    expect(await send('gitea-pull_request_review-comment-legacy-pre1.19.json')).toMatchObject({
      outcome: 'started',
      stages: ['answer-review'],
    });
    expect(await send('gitea-issue_comment-created-on-pull.json')).toMatchObject({ outcome: 'started', stages: ['answer-comment'] });
  });

  it('refuses every payload with a wrong signature, and accepts the sha256= header alone', async () => {
    h = await createIngressHarness({ secret: VECTOR_SECRET });
    for (const [file, [event, eventType]] of Object.entries(CASES)) {
      const body = read(file);
      const wrong = giteaHeaders(body, { event, eventType, secret: 'IsWishesWereHorsesWedAllBeEatingSteak' });
      expect((await h.post('/webhook/gitea', body, wrong)).status, file).toBe(401);
      const hubOnly = giteaHeaders(body, { event, eventType, secret: VECTOR_SECRET });
      for (const name of ['X-Gitea-Signature', 'X-Gogs-Signature']) hubOnly[name] = '';
      expect((await h.post('/webhook/gitea', body, hubOnly)).status, file).toBe(202);
    }
  });
});
