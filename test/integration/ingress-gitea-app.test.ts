import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { fixtureJson, giteaHeaders, readFixture, toBody } from '../helpers/gitea-webhook.js';
import { createIngressHarness, type IngressHarness } from '../helpers/ingress.js';
import { until } from '../helpers/until.js';
import { signBody } from '../../src/ingress/signature.js';

const SECRET = 'test-webhook-secret';
let h: IngressHarness | undefined;

afterEach(async () => {
  await h?.cleanup();
  h = undefined;
});

// Per-repository secrets come from files (baton.yaml never holds a secret), as an operator gives them.
const secretsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-ingress-secrets-'));
afterAll(() => fs.rmSync(secretsDir, { recursive: true, force: true }));
function secretFile(value: string): string {
  const file = path.join(secretsDir, `${value}.txt`);
  fs.writeFileSync(file, `${value}\n`, { mode: 0o600 });
  return file;
}

async function harness(options: Parameters<typeof createIngressHarness>[0] = {}): Promise<IngressHarness> {
  h = await createIngressHarness({ secret: SECRET, ...options });
  return h;
}

function label(name: string) {
  return { id: name.length, name, color: '0e8a16', description: '', exclusive: false, is_archived: false, url: '' };
}

/** issues-label_updated.json with the given labels on the issue. */
let labelChanges = 0;
function labelled(names: string[], number = 7): Buffer {
  const payload = fixtureJson('issues-label_updated.json');
  const issue = payload.issue as Record<string, unknown>;
  issue.labels = names.map(label);
  // Each label change is its own event: Gitea's body differs at least in updated_at.
  issue.updated_at = new Date(Date.UTC(2026, 0, 1) + ++labelChanges * 1000).toISOString();
  issue.number = number;
  payload.number = number;
  return toBody(payload);
}

const ISSUE_LABEL = { event: 'issues', eventType: 'issue_label' };

/** The id of the (first) run a processed delivery started. */
const runOf = (res: { delivery?: { runIds: number[] } }): number => res.delivery!.runIds[0]!;

describe('POST /webhook/gitea: routing to stages', () => {
  it('answers 202 with the stored delivery, whose processing queues analyse for an opened issue', async () => {
    const { post, runs: queries } = await harness();
    const body = readFixture('issues-opened.json');
    const headers = giteaHeaders(body, { event: 'issues', eventType: 'issues', secret: SECRET, delivery: 'delivery-opened-1' });
    const res = await post('/webhook/gitea', body, headers);
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ ok: true, id: expect.any(Number) });
    expect(res.delivery).toMatchObject({
      id: res.body.id,
      source: 'webhook',
      endpoint: '/webhook/gitea',
      deliveryId: 'delivery-opened-1',
      repository: 'acme/app',
      number: 7,
      outcome: 'started',
      stages: ['analyse'],
      verdict: 'issue #7 opened by alice',
    });
    // Stored as received (the exact signed bytes), the signature never.
    expect(res.delivery!.body).toBe(body.toString('utf8'));
    expect(JSON.stringify(res.delivery!.headers)).not.toMatch(/signature/i);
    const run = await queries.get(runOf(res));
    expect(run).toMatchObject({ stage: 'analyse', owner: 'acme', repo: 'app', number: 7, status: 'queued' });
    expect(run?.payload).toMatchObject({
      account: 'dev',
      build: 'light',
      forge: 'gitea',
      delivery: 'delivery-opened-1',
    });
    // The payload's repository.clone_url is the sender's to write: nothing of it is kept.
    expect(run?.payload).not.toHaveProperty('cloneUrl');
  });

  it('queues fix-bug for an issue opened with the bug label', async () => {
    const { post } = await harness();
    const payload = fixtureJson('issues-opened.json');
    (payload.issue as Record<string, unknown>).labels = [label('bug')];
    const body = toBody(payload);
    const res = await post('/webhook/gitea', body, giteaHeaders(body, { event: 'issues', eventType: 'issues', secret: SECRET }));
    expect(res.delivery).toMatchObject({ outcome: 'started', stages: ['fix-bug'] });
  });

  it('starts develop only when ready-for-development is newly present (label_updated has no diff)', async () => {
    const { post } = await harness();
    const first = labelled(['enhancement', 'ready-for-development']);
    const res1 = await post('/webhook/gitea', first, giteaHeaders(first, { ...ISSUE_LABEL, secret: SECRET }));
    expect(res1.delivery).toMatchObject({
      outcome: 'started',
      stages: ['develop'],
      verdict: 'label "ready-for-development" added by alice',
    });

    // Another label added: Gitea sends the full list again; develop must not start again.
    const second = labelled(['enhancement', 'ready-for-development', 'priority']);
    const res2 = await post('/webhook/gitea', second, giteaHeaders(second, { ...ISSUE_LABEL, secret: SECRET }));
    expect(res2.delivery).toMatchObject({ outcome: 'ignored', verdict: 'ignored: no trigger matches' });

    // Removed and added back: new again, and merges into the queued run.
    const removed = labelled(['enhancement']);
    await post('/webhook/gitea', removed, giteaHeaders(removed, { ...ISSUE_LABEL, secret: SECRET }));
    const again = labelled(['enhancement', 'ready-for-development']);
    const res3 = await post('/webhook/gitea', again, giteaHeaders(again, { ...ISSUE_LABEL, secret: SECRET }));
    expect(res3.delivery).toMatchObject({ outcome: 'started', stages: ['develop'], verdict: `coalesced into run ${runOf(res1)}` });
  });

  it('records a follow-up when the stage is already running', async () => {
    const { post, engine } = await harness();
    const body = labelled(['ready-for-architecture']);
    const res1 = await post('/webhook/gitea', body, giteaHeaders(body, { ...ISSUE_LABEL, secret: SECRET }));
    await engine.claim();
    const off = labelled([]);
    await post('/webhook/gitea', off, giteaHeaders(off, { ...ISSUE_LABEL, secret: SECRET }));
    const again = labelled(['ready-for-architecture']);
    const res2 = await post('/webhook/gitea', again, giteaHeaders(again, { ...ISSUE_LABEL, secret: SECRET }));
    expect(res2.delivery).toMatchObject({ outcome: 'started', stages: ['architect'], verdict: `follow-up recorded on run ${runOf(res1)}` });
  });

  it('drops a duplicate for a stage configured with onDuplicate: drop', async () => {
    const { post, engine } = await harness({ pipeline: { stages: { architect: { onDuplicate: 'drop' } } } });
    const body = labelled(['ready-for-architecture']);
    const res1 = await post('/webhook/gitea', body, giteaHeaders(body, { ...ISSUE_LABEL, secret: SECRET }));
    await engine.claim();
    const off = labelled([]);
    await post('/webhook/gitea', off, giteaHeaders(off, { ...ISSUE_LABEL, secret: SECRET }));
    const again = labelled(['ready-for-architecture']);
    const res2 = await post('/webhook/gitea', again, giteaHeaders(again, { ...ISSUE_LABEL, secret: SECRET }));
    expect(res2.delivery).toMatchObject({ verdict: `dropped: run ${runOf(res1)} is already in progress` });
  });

  it('queues several stages at once and lists them in the verdict', async () => {
    const { post } = await harness();
    const body = labelled(['ready-for-testing', 'ready-for-deployment', 'deploy:production']);
    const res = await post('/webhook/gitea', body, giteaHeaders(body, { ...ISSUE_LABEL, secret: SECRET }));
    expect(res.delivery).toMatchObject({ outcome: 'started', stages: ['test', 'devops'] });
    expect(res.delivery!.verdict).toMatch(/^test: .*; devops: /);
    const devops = await h!.runs.get(res.delivery!.runIds[1]!);
    expect(devops?.payload.deployEnv).toBe('production');
  });

  it('queues analyse for a human comment on an issue in analysis', async () => {
    const { post } = await harness();
    const body = readFixture('issue_comment-created.json');
    const res = await post(
      '/webhook/gitea',
      body,
      giteaHeaders(body, { event: 'issue_comment', eventType: 'issue_comment', secret: SECRET }),
    );
    expect(res.delivery).toMatchObject({ outcome: 'started', stages: ['analyse'], verdict: 'comment added by alice' });
  });

  it('ignores a comment by a bot account', async () => {
    const { post } = await harness();
    const payload = fixtureJson('issue_comment-created.json');
    payload.sender = { id: 7, login: 'claude-dev', username: 'claude-dev' };
    (payload.comment as Record<string, unknown>).user = payload.sender;
    const body = toBody(payload);
    const res = await post(
      '/webhook/gitea',
      body,
      giteaHeaders(body, { event: 'issue_comment', eventType: 'issue_comment', secret: SECRET }),
    );
    expect(res.delivery).toMatchObject({ outcome: 'ignored', verdict: 'ignored: bot sender', runIds: [] });
  });

  it('queues review-code as the review bot for an opened PR', async () => {
    const { post, runs: queries } = await harness();
    const body = readFixture('pull_request-opened.json');
    const res = await post(
      '/webhook/gitea',
      body,
      giteaHeaders(body, { event: 'pull_request', eventType: 'pull_request', secret: SECRET }),
    );
    expect(res.delivery).toMatchObject({ outcome: 'started', stages: ['review-code'] });
    const run = await queries.get(runOf(res));
    expect(run).toMatchObject({ number: 8, payload: { account: 'review', headRef: 'fix/7-draft-crash', isPull: true } });
  });

  it('queues review-code for new commits (pull_request_sync)', async () => {
    const { post } = await harness();
    const payload = fixtureJson('pull_request-opened.json');
    payload.action = 'synchronized';
    const body = toBody(payload);
    const res = await post(
      '/webhook/gitea',
      body,
      giteaHeaders(body, { event: 'pull_request', eventType: 'pull_request_sync', secret: SECRET }),
    );
    expect(res.delivery).toMatchObject({ outcome: 'started', stages: ['review-code'], verdict: 'new commits on pull request #8 by bob' });
  });

  it('queues rework-pr for requested changes and test for an approval', async () => {
    const { post } = await harness();
    const rejected = readFixture('pull_request_review-rejected.json');
    const res1 = await post(
      '/webhook/gitea',
      rejected,
      giteaHeaders(rejected, { event: 'pull_request_rejected', eventType: 'pull_request_review_rejected', secret: SECRET }),
    );
    expect(res1.delivery).toMatchObject({ outcome: 'started', stages: ['rework-pr'], verdict: 'changes requested by carol' });

    const payload = fixtureJson('pull_request_review-rejected.json');
    payload.review = { type: 'pull_request_review_approved', content: 'LGTM' };
    const approved = toBody(payload);
    const res2 = await post(
      '/webhook/gitea',
      approved,
      giteaHeaders(approved, { event: 'pull_request_approved', eventType: 'pull_request_review_approved', secret: SECRET }),
    );
    expect(res2.delivery).toMatchObject({ outcome: 'started', stages: ['test'], verdict: 'review approved by carol' });
  });

  it('recognises a review from X-Gitea-Event alone (no Event-Type header)', async () => {
    const { post } = await harness();
    const payload = fixtureJson('pull_request_review-rejected.json');
    delete payload.review;
    const body = toBody(payload);
    const res = await post('/webhook/gitea', body, giteaHeaders(body, { event: 'pull_request_rejected', secret: SECRET }));
    expect(res.delivery).toMatchObject({ outcome: 'started', stages: ['rework-pr'] });
  });

  it('queues release when an issue gets the release label', async () => {
    const { post } = await harness();
    const body = labelled(['release']);
    const res = await post('/webhook/gitea', body, giteaHeaders(body, { ...ISSUE_LABEL, secret: SECRET }));
    expect(res.delivery).toMatchObject({ outcome: 'started', stages: ['release'] });
  });

  it.each([
    ['issues-closed.json', { event: 'issues', eventType: 'issues' }, 'closed issue'],
    ['pull_request-closed-merged.json', { event: 'pull_request', eventType: 'pull_request' }, 'merged pull request'],
    ['release-published.json', { event: 'release', eventType: 'release' }, 'no trigger matches'],
    ['issues-opened.json', { event: 'repository', eventType: 'repository' }, 'unsupported event "repository"'],
  ])('ignores %s (%o) with the reason %s', async (file, headers, reason) => {
    const { post, runs: queries } = await harness();
    const body = readFixture(file);
    const res = await post('/webhook/gitea', body, giteaHeaders(body, { ...headers, secret: SECRET }));
    expect(res.status).toBe(202);
    expect(res.delivery).toMatchObject({ outcome: 'ignored', verdict: `ignored: ${reason}` });
    expect(await queries.list()).toEqual([]);
  });

  it('accepts Forgejo deliveries (X-Forgejo-* headers, X-Forgejo-Signature)', async () => {
    const { post, runs: queries } = await harness();
    const body = readFixture('issues-opened.json');
    const headers = giteaHeaders(body, { event: 'issues', eventType: 'issues', secret: SECRET, forgejo: true });
    for (const name of Object.keys(headers)) if (name !== 'Content-Type' && !name.startsWith('X-Forgejo')) delete headers[name];
    const res = await post('/webhook/gitea', body, headers);
    expect(res.delivery).toMatchObject({ outcome: 'started', stages: ['analyse'] });
    expect((await queries.get(runOf(res)))?.payload.forge).toBe('forgejo');
  });

  it('accepts the form content type, verifying the signature over the JSON inside payload=', async () => {
    const { post } = await harness();
    const json = readFixture('issues-opened.json');
    const headers = giteaHeaders(json, { event: 'issues', eventType: 'issues', secret: SECRET });
    headers['Content-Type'] = 'application/x-www-form-urlencoded';
    const res = await post('/webhook/gitea', `payload=${encodeURIComponent(json.toString('utf8'))}`, headers);
    // The JSON inside is what is stored (and hashed): the same event as a JSON delivery.
    expect(res.delivery).toMatchObject({ outcome: 'started', stages: ['analyse'], body: json.toString('utf8') });
  });
});

describe('POST /webhook/gitea: security', () => {
  const body = readFixture('issues-opened.json');
  const base = () => giteaHeaders(body, { event: 'issues', eventType: 'issues' });

  it('refuses a missing signature with 401 when WEBHOOK_SECRET is set', async () => {
    const { post, runs: queries } = await harness();
    const res = await post('/webhook/gitea', body, base());
    expect(res).toEqual({
      status: 401,
      body: {
        error: {
          code: 'unauthorized',
          message: 'missing signature: X-Gitea-Signature is required; see docs/troubleshooting.md#signature-failures',
        },
      },
    });
    expect(await queries.list()).toEqual([]);
  });

  it('refuses a wrong signature with 401, without parsing the body', async () => {
    const { post } = await harness();
    const headers = { ...base(), 'X-Gitea-Signature': signBody(body, 'not-the-secret') };
    expect((await post('/webhook/gitea', body, headers)).status).toBe(401);
    // Invalid JSON with a bad signature is still a 401, not a 400: nothing was parsed.
    const res = await post('/webhook/gitea', '{not json', { ...headers, 'X-Gitea-Signature': signBody('{not json', 'nope') });
    expect(res).toEqual({
      status: 401,
      body: { error: { code: 'unauthorized', message: 'invalid signature; see docs/troubleshooting.md#signature-failures' } },
    });
  });

  it('refuses a signature over different bytes (re-serialised JSON)', async () => {
    const { post } = await harness();
    const reserialised = JSON.stringify(JSON.parse(body.toString('utf8')));
    const res = await post('/webhook/gitea', reserialised, { ...base(), 'X-Gitea-Signature': signBody(body, SECRET) });
    expect(res.status).toBe(401);
  });

  it('accepts X-Hub-Signature-256 in its sha256= form alone', async () => {
    const { post } = await harness();
    const headers: Record<string, string> = { 'Content-Type': 'application/json', 'X-Gitea-Event': 'issues' };
    headers['X-Hub-Signature-256'] = `sha256=${signBody(body, SECRET)}`;
    expect((await post('/webhook/gitea', body, headers)).status).toBe(202);
    headers['X-Hub-Signature-256'] = `sha256=${signBody(body, 'other')}`;
    expect((await post('/webhook/gitea', body, headers)).status).toBe(401);
  });

  it('accepts unsigned deliveries only with webhooks.allowUnsigned, whatever empty signature headers say', async () => {
    const { post } = await harness({ secret: undefined, webhooks: { allowUnsigned: true } });
    const res = await post('/webhook/gitea', body, base());
    expect(res.delivery).toMatchObject({ outcome: 'started', stages: ['analyse'] });
  });

  it('uses a per-repository secret for that repository only', async () => {
    const { post } = await harness({
      secret: undefined,
      webhooks: { repositories: { 'Acme/App': { secretFile: secretFile('repo-secret') } } },
    });
    const other = fixtureJson('issues-opened.json');
    (other.repository as Record<string, unknown>).name = 'other';
    const otherBody = toBody(other);

    expect((await post('/webhook/gitea', body, base())).status).toBe(401);
    const signed = giteaHeaders(body, { event: 'issues', eventType: 'issues', secret: 'repo-secret' });
    expect((await post('/webhook/gitea', body, signed)).status).toBe(202);
    // Another repository has no secret configured (and no global one): unsigned is refused, and
    // so is its body signed with acme/app's secret.
    expect((await post('/webhook/gitea', otherBody, giteaHeaders(otherBody, { event: 'issues', eventType: 'issues' }))).status).toBe(401);
    const borrowed = giteaHeaders(otherBody, { event: 'issues', eventType: 'issues', secret: 'repo-secret' });
    expect(await post('/webhook/gitea', otherBody, borrowed)).toMatchObject({
      status: 401,
      body: {
        error: {
          code: 'unauthorized',
          message: expect.stringMatching(
            /^no webhook secret applies to acme\/other: unsigned deliveries are refused: .*; see docs\/troubleshooting\.md#signature-failures$/,
          ),
        },
      },
    });
  });

  it('does not accept the global secret for a repository with its own, nor its secret for another', async () => {
    const { post } = await harness({ webhooks: { repositories: { 'acme/app': { secretFile: secretFile('repo-secret') } } } });
    const globalSigned = giteaHeaders(body, { event: 'issues', eventType: 'issues', secret: SECRET });
    expect(await post('/webhook/gitea', body, globalSigned)).toEqual({
      status: 401,
      body: { error: { code: 'unauthorized', message: 'invalid signature for acme/app; see docs/troubleshooting.md#signature-failures' } },
    });
    const other = fixtureJson('issues-opened.json');
    (other.repository as Record<string, unknown>).name = 'other';
    const otherBody = toBody(other);
    const repoSigned = giteaHeaders(otherBody, { event: 'issues', eventType: 'issues', secret: 'repo-secret' });
    expect((await post('/webhook/gitea', otherBody, repoSigned)).status).toBe(401);
    const fine = giteaHeaders(otherBody, { event: 'issues', eventType: 'issues', secret: SECRET });
    expect((await post('/webhook/gitea', otherBody, fine)).status).toBe(202);
  });

  it('refuses repositories outside webhooks.allow with 403 and the reason', async () => {
    const { post } = await harness({ webhooks: { allow: ['tools/*', 'acme/api'] } });
    const res = await post('/webhook/gitea', body, giteaHeaders(body, { event: 'issues', eventType: 'issues', secret: SECRET }));
    expect(res).toEqual({ status: 403, body: { error: { code: 'forbidden', message: 'repository acme/app is not in webhooks.allow' } } });
    await h!.cleanup();
    const allowed = await harness({ webhooks: { allow: ['ACME/*'] } });
    expect(
      (await allowed.post('/webhook/gitea', body, giteaHeaders(body, { event: 'issues', eventType: 'issues', secret: SECRET }))).status,
    ).toBe(202);
  });

  it('answers 413 for a body over the limit, even without Content-Length', async () => {
    const { app } = await harness();
    const big = new Uint8Array(5 * 1024 * 1024 + 1).fill(0x20);
    const res = await app.request('/webhook/gitea', { method: 'POST', body: big, headers: base() });
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({ error: { code: 'too_large', message: 'body is larger than the limit of 5242880 bytes' } });

    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 6; i++) controller.enqueue(new Uint8Array(1024 * 1024).fill(0x20));
        controller.close();
      },
    });
    const streamed = await app.request('/webhook/gitea', { method: 'POST', body: stream, headers: base(), duplex: 'half' } as RequestInit);
    expect(streamed.status).toBe(413);
  });

  it('honours a smaller webhooks.maxBodyBytes', async () => {
    const { post } = await harness({ webhooks: { maxBodyBytes: 100 } });
    expect((await post('/webhook/gitea', body, giteaHeaders(body, { event: 'issues', eventType: 'issues', secret: SECRET }))).status).toBe(
      413,
    );
  });

  it('has one effect per event: the same delivery id, a manual redelivery (new id) and no id at all', async () => {
    const { post, runs: queries } = await harness();
    const signed = (delivery?: string) => {
      const headers = giteaHeaders(body, { event: 'issues', eventType: 'issues', secret: SECRET, delivery });
      if (delivery === undefined) for (const name of ['X-Gitea-Delivery', 'X-Gogs-Delivery', 'X-GitHub-Delivery']) delete headers[name];
      return headers;
    };
    const first = await post('/webhook/gitea', body, signed('d6b7a6a8-0000-4000-8000-000000000001'));
    expect(first.delivery).toMatchObject({ outcome: 'started', stages: ['analyse'] });
    // Every copy is accepted and kept (202), and processed to a duplicate verdict.
    const again = await post('/webhook/gitea', body, signed('d6b7a6a8-0000-4000-8000-000000000001'));
    const redelivered = await post('/webhook/gitea', body, signed('d6b7a6a8-0000-4000-8000-000000000002'));
    const noId = await post('/webhook/gitea', body, signed(undefined));
    for (const copy of [again, redelivered, noId]) {
      expect(copy.status).toBe(202);
      expect(copy.delivery).toMatchObject({ outcome: 'duplicate', verdict: `duplicate of delivery ${first.body.id}`, runIds: [] });
    }
    expect(noId.delivery!.deliveryId).toBeNull();
    const runs = await queries.list();
    expect(runs).toHaveLength(1);
    expect(await queries.events(runs[0]!.id)).toHaveLength(1);
  });

  it('has one effect when the same body reaches a legacy path too (one label memory for every path)', async () => {
    const { post, runs: queries } = await harness();
    const labels = labelled(['ready-for-development']);
    const main = await post('/webhook/gitea', labels, giteaHeaders(labels, { ...ISSUE_LABEL, secret: SECRET }));
    expect(main.delivery).toMatchObject({ outcome: 'started', stages: ['develop'] });
    const legacy = await post('/webhook/gitea-issue-label', labels, giteaHeaders(labels, { ...ISSUE_LABEL, secret: SECRET }));
    expect(legacy.delivery).toMatchObject({ outcome: 'duplicate', endpoint: '/webhook/gitea-issue-label' });
    // A later label change seen first on the legacy path is remembered for the main one too.
    const more = labelled(['ready-for-development', 'priority']);
    const viaLegacy = await post('/webhook/gitea-issue-label', more, giteaHeaders(more, { ...ISSUE_LABEL, secret: SECRET }));
    expect(viaLegacy.delivery).toMatchObject({ outcome: 'ignored', verdict: 'ignored: no trigger matches' });
    expect(await queries.list()).toHaveLength(1);
  });

  it('keeps dedup durable: a worker started afresh on the same database still finds the earlier copy', async () => {
    const first = await harness();
    const headers = giteaHeaders(body, { event: 'issues', eventType: 'issues', secret: SECRET, delivery: 'durable-1' });
    expect((await first.post('/webhook/gitea', body, headers)).delivery).toMatchObject({ outcome: 'started' });
    await first.processing.worker.stop();
    const { createInboxProcessing, parseWebhooksConfig } = await import('../../src/ingress/index.js');
    const { parsePipelineConfig } = await import('../../src/pipeline/index.js');
    const fresh = createInboxProcessing({
      store: first.t.store,
      engine: first.engine,
      pipeline: parsePipelineConfig(undefined, { dev: { username: 'claude-dev' }, review: { username: 'claude-review' } }).pipeline,
      webhooks: parseWebhooksConfig({ requireWritePermission: false }).webhooks,
      logger: { warn: () => {}, error: () => {} },
    });
    await fresh.worker.start();
    try {
      const copy = await fresh.inbox.insert({
        source: 'webhook',
        endpoint: '/webhook/gitea',
        deliveryId: 'durable-2',
        event: 'issues',
        eventType: 'issues',
        headers: { 'x-gitea-event': 'issues', 'x-gitea-event-type': 'issues' },
        body: body.toString('utf8'),
        repository: 'acme/app',
        number: 7,
      });
      const done = await until(async () => {
        const d = await fresh.inbox.get(copy.id);
        return d?.status === 'processed' ? d : undefined;
      }, 'the copy processed');
      expect(done.outcome).toBe('duplicate');
    } finally {
      await fresh.worker.stop();
    }
  });

  it('lets only senders with write permission trigger, caching the answer', async () => {
    const calls: string[] = [];
    const { post } = await harness({
      webhooks: { requireWritePermission: true },
      permissionOf: async (owner, repo, user) => {
        calls.push(`${owner}/${repo}:${user}`);
        return user === 'alice' ? 'read' : 'write';
      },
    });
    const res = await post('/webhook/gitea', body, giteaHeaders(body, { event: 'issues', eventType: 'issues', secret: SECRET }));
    expect(res.delivery).toMatchObject({
      outcome: 'not_permitted',
      verdict: 'not permitted: sender alice lacks write permission; see docs/troubleshooting.md#permission-failures',
    });
    const comment = readFixture('issue_comment-created.json');
    const again = await post(
      '/webhook/gitea',
      comment,
      giteaHeaders(comment, { event: 'issue_comment', eventType: 'issue_comment', secret: SECRET }),
    );
    expect(again.delivery!.verdict).toBe(
      'not permitted: sender alice lacks write permission; see docs/troubleshooting.md#permission-failures',
    );
    expect(calls).toEqual(['acme/app:alice']);
    const pr = readFixture('pull_request-opened.json');
    const byBob = await post('/webhook/gitea', pr, giteaHeaders(pr, { event: 'pull_request', eventType: 'pull_request', secret: SECRET }));
    expect(byBob.delivery).toMatchObject({ outcome: 'started', stages: ['review-code'] });
  });

  it('refuses to start with requireWritePermission but no permission lookup', async () => {
    await expect(harness({ webhooks: { requireWritePermission: true } })).rejects.toThrow(/requireWritePermission/);
  });
});

describe('when processing a delivery fails for a while', () => {
  it('keeps the delivery and retries it: a failing enqueue does not lose the event nor remember its labels', async () => {
    const { t, engine, runs: queries } = await harness();
    await h!.processing.worker.stop();
    const { createGiteaIngress, createInboxProcessing, parseWebhooksConfig } = await import('../../src/ingress/index.js');
    const { parsePipelineConfig } = await import('../../src/pipeline/index.js');
    let failures = 2;
    const processing = createInboxProcessing({
      store: t.store,
      engine: {
        enqueueIn: async (scope, request) => {
          if (failures-- > 0) throw new Error('database is locked');
          return engine.enqueueIn(scope, request);
        },
      },
      pipeline: parsePipelineConfig(undefined, { dev: { username: 'claude-dev' }, review: { username: 'claude-review' } }).pipeline,
      webhooks: parseWebhooksConfig({ requireWritePermission: false }).webhooks,
      logger: { warn: () => {}, error: () => {} },
      retryBaseMs: 10,
    });
    const app = createGiteaIngress({ inbox: processing.inbox, secret: SECRET });
    await processing.worker.start();
    try {
      const body = labelled(['ready-for-development']);
      const headers = giteaHeaders(body, { event: 'issues', eventType: 'issue_label', secret: SECRET, delivery: 'retry-me' });
      const res = await app.request('/webhook/gitea', { method: 'POST', body: new Uint8Array(body), headers });
      expect(res.status).toBe(202);
      const { id } = (await res.json()) as { id: number };
      const done = await until(async () => {
        const d = await processing.inbox.get(id);
        return d?.status === 'processed' ? d : undefined;
      }, 'the delivery processed after its retries');
      // Attempts 1 and 2 rolled back (no run, no label memory); the third saw the label as new.
      expect(done).toMatchObject({ outcome: 'started', stages: ['develop'], attempts: 3 });
      expect(await queries.list()).toHaveLength(1);
    } finally {
      await processing.worker.stop();
    }
  });

  it('retries while the permission lookup fails transiently, honouring Retry-After', async () => {
    let down = 3;
    const { post, processed } = await harness({
      webhooks: { requireWritePermission: true },
      permissionOf: async () => {
        if (down-- > 0)
          throw Object.assign(new Error('Gitea GET …/permission answered 429'), { status: 429, retryable: true, retryAfterMs: 5 });
        return 'write';
      },
    });
    const body = readFixture('issues-opened.json');
    const res = await post('/webhook/gitea', body, giteaHeaders(body, { event: 'issues', eventType: 'issues', secret: SECRET }), {
      wait: false,
    });
    expect(res.status).toBe(202);
    expect(await processed(res.body.id as number)).toMatchObject({ outcome: 'started', stages: ['analyse'], attempts: 4 });
  });
});

describe('mounting', () => {
  it('works when mounted into the main app with app.route', async () => {
    const { app } = await harness();
    const { Hono } = await import('hono');
    const parent = new Hono();
    parent.onError((_err, c) => c.json({ parent: true }, 500));
    parent.route('/', app);
    const body = readFixture('issues-opened.json');
    const ok = await parent.request('/webhook/gitea', {
      method: 'POST',
      body: new Uint8Array(body),
      headers: giteaHeaders(body, { event: 'issues', eventType: 'issues', secret: SECRET }),
    });
    expect(ok.status).toBe(202);
    const bad = await parent.request('/webhook/gitea', {
      method: 'POST',
      body: '{',
      headers: giteaHeaders(Buffer.from('{'), { event: 'issues', eventType: 'issues', secret: SECRET }),
    });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: { code: 'invalid_json', message: expect.stringMatching(/^invalid JSON/) } });
  });
});

describe('logging', () => {
  it('logs each delivery with its id, event and outcome, and never a secret or signature', async () => {
    const lines: { level: string; details: Record<string, unknown>; message: string }[] = [];
    const logger = {
      debug: (details: Record<string, unknown>, message: string) => lines.push({ level: 'debug', details, message }),
      info: (details: Record<string, unknown>, message: string) => lines.push({ level: 'info', details, message }),
      warn: (details: Record<string, unknown>, message: string) => lines.push({ level: 'warn', details, message }),
      error: (details: Record<string, unknown>, message: string) => lines.push({ level: 'error', details, message }),
    };
    const { post } = await harness({ logger, webhooks: { repositories: { 'acme/app': { secretFile: secretFile('repo-only-secret') } } } });
    const body = readFixture('issues-opened.json');
    const good = giteaHeaders(body, { event: 'issues', eventType: 'issues', secret: 'repo-only-secret', delivery: 'log-1' });
    await post('/webhook/gitea', body, good);
    const bad = giteaHeaders(body, { event: 'issues', eventType: 'issues', secret: 'wrong', delivery: 'log-2' });
    await post('/webhook/gitea', body, bad);
    const http = lines.filter((l) => l.message !== 'webhook delivery processed');
    expect(http.map((l) => [l.level, l.details.delivery, l.details.event, l.details.status, l.details.outcome])).toEqual([
      // The acceptance at debug (the stored row is its record); the verdict below is at info.
      ['debug', 'log-1', 'issues', 202, undefined],
      ['warn', 'log-2', 'issues', 401, 'invalid signature; see docs/troubleshooting.md#signature-failures'],
    ]);
    const processedLine = lines.find((l) => l.message === 'webhook delivery processed');
    expect(processedLine?.details).toMatchObject({ deliveryId: 'log-1', outcome: 'started', verdict: 'issue #7 opened by alice' });
    const text = JSON.stringify(lines);
    for (const secret of [SECRET, 'repo-only-secret', good['X-Gitea-Signature']!, bad['X-Gitea-Signature']!])
      expect(text).not.toContain(secret);
  });
});

describe('POST /webhook/gitea: bad input', () => {
  const headers = (body: Uint8Array | string) => giteaHeaders(Buffer.from(body), { event: 'issues', eventType: 'issues', secret: SECRET });

  it.each([
    ['{"action": "opened",', /^invalid JSON: /],
    ['[1, 2]', /^payload must be a JSON object$/],
    ['"text"', /^payload must be a JSON object$/],
    ['{"action":"opened","repository":{"name":"app"}}', /^missing repository\.owner$/],
    ['{"action":"opened","repository":{"name":"app","owner":{}}}', /^missing repository\.owner\.login$/],
  ])('answers 400 naming the problem for %s, storing nothing', async (text, error) => {
    const { post, processing } = await harness();
    const res = await post('/webhook/gitea', text, headers(text));
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: { code: expect.stringMatching(/^(bad_request|invalid_json)$/), message: expect.stringMatching(error) },
    });
    expect((await processing.inbox.list()).deliveries).toEqual([]);
  });

  it.each([
    ['{"action":"opened"}', /^missing repository$/],
    ['{"action":"opened","repository":{"name":"app","owner":{"login":"acme"}},"sender":{"login":"a"}}', /^missing issue$/],
    [
      '{"action":"opened","repository":{"name":"app","owner":{"login":"acme"}},"sender":{"login":"a"},"issue":{"number":"7","state":"open"}}',
      /^issue\.number must be a positive whole number, got "7"$/,
    ],
    [
      '{"action":"opened","repository":{"name":"app","owner":{"login":"acme"}},"sender":{"login":"a"},"issue":{"number":7}}',
      /^missing issue\.state$/,
    ],
  ])('keeps a signed JSON object it cannot use (%s) with an invalid-payload verdict naming the problem', async (text, error) => {
    const { post, runs: queries } = await harness();
    const res = await post('/webhook/gitea', text, headers(text));
    expect(res.status).toBe(202);
    expect(res.delivery).toMatchObject({ outcome: 'invalid', body: text });
    expect(res.delivery!.verdict!.replace(/^invalid payload: /, '')).toMatch(error);
    expect(await queries.list()).toEqual([]);
  });

  it('answers 400 for an empty body, binary garbage and a missing event header', async () => {
    const { post } = await harness();
    expect((await post('/webhook/gitea', '', headers(''))).body).toEqual({
      error: { code: 'bad_request', message: 'empty body: expected a JSON webhook payload' },
    });
    const garbage = new Uint8Array([0xff, 0xfe, 0x00, 0x81, 0x7b]);
    expect((await post('/webhook/gitea', garbage, headers(garbage))).body).toEqual({
      error: { code: 'bad_request', message: 'body is not valid UTF-8 text' },
    });
    const body = readFixture('issues-opened.json');
    const noEvent = { 'Content-Type': 'application/json', 'X-Gitea-Signature': signBody(body, SECRET) };
    expect((await post('/webhook/gitea', body, noEvent)).body).toEqual({
      error: { code: 'bad_request', message: 'missing X-Gitea-Event header (or X-Forgejo-Event)' },
    });
  });

  it('answers 415 for a wrong or missing content type', async () => {
    const { post } = await harness();
    const body = readFixture('issues-opened.json');
    const res = await post('/webhook/gitea', body, { ...headers(body), 'Content-Type': 'text/plain' });
    expect(res).toEqual({
      status: 415,
      body: { error: { code: 'unsupported_media_type', message: 'unsupported Content-Type "text/plain": send application/json' } },
    });
  });

  it('answers 405 for other methods', async () => {
    const { app } = await harness();
    const res = await app.request('/webhook/gitea', { method: 'GET' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST');
    expect(await res.json()).toEqual({
      error: { code: 'method_not_allowed', message: 'GET is not allowed: webhooks are delivered with POST' },
    });
  });
});

describe('legacy paths', () => {
  const send = async (path: string, file: string | Buffer, event: string, eventType: string) => {
    const body = typeof file === 'string' ? readFixture(file) : file;
    return h!.post(path, body, giteaHeaders(body, { event, eventType, secret: SECRET }));
  };

  it('gitea-issue-triage acts on opened issues only', async () => {
    await harness();
    expect((await send('/webhook/gitea-issue-triage', 'issues-opened.json', 'issues', 'issues')).delivery).toMatchObject({
      outcome: 'started',
      stages: ['analyse'],
    });
    expect((await send('/webhook/gitea-issue-triage', 'pull_request-opened.json', 'pull_request', 'pull_request')).delivery).toMatchObject({
      outcome: 'ignored',
      verdict: 'ignored: pr_opened events are not handled by /webhook/gitea-issue-triage',
    });
  });

  it('gitea-issue-label starts label stages but leaves release to gitea-release, which acts on the same event', async () => {
    const { runs: queries } = await harness();
    const both = labelled(['ready-for-development', 'release']);
    const label = await send('/webhook/gitea-issue-label', both, 'issues', 'issue_label');
    expect(label.delivery).toMatchObject({ outcome: 'started', stages: ['develop'] });
    // The same body on the release path: one label memory, but the copy diffs against what the
    // first copy saw, and starts only what no copy has started yet.
    const release = await send('/webhook/gitea-release', both, 'issues', 'issue_label');
    expect(release.delivery).toMatchObject({ outcome: 'started', stages: ['release'] });
    // And once more on either path: nothing left to start.
    expect((await send('/webhook/gitea-release', both, 'issues', 'issue_label')).delivery).toMatchObject({ outcome: 'duplicate' });
    expect((await queries.list()).map((r) => r.stage).sort()).toEqual(['develop', 'release']);
  });

  it('gitea-issue-comment acts on comments', async () => {
    await harness();
    expect(
      (await send('/webhook/gitea-issue-comment', 'issue_comment-created.json', 'issue_comment', 'issue_comment')).delivery,
    ).toMatchObject({ stages: ['analyse'] });
    expect((await send('/webhook/gitea-issue-comment', 'issues-opened.json', 'issues', 'issues')).delivery?.verdict).toBe(
      'ignored: issue_opened events are not handled by /webhook/gitea-issue-comment',
    );
  });

  it('gitea-pr-review starts review-code; gitea-pr-review-rework acts on submitted reviews', async () => {
    await harness();
    expect((await send('/webhook/gitea-pr-review', 'pull_request-opened.json', 'pull_request', 'pull_request')).delivery).toMatchObject({
      stages: ['review-code'],
    });
    expect(
      (await send('/webhook/gitea-pr-review', 'pull_request_review-rejected.json', 'pull_request_rejected', 'pull_request_review_rejected'))
        .delivery?.verdict,
    ).toBe('ignored: review events are not handled by /webhook/gitea-pr-review');
    expect(
      (
        await send(
          '/webhook/gitea-pr-review-rework',
          'pull_request_review-rejected.json',
          'pull_request_rejected',
          'pull_request_review_rejected',
        )
      ).delivery,
    ).toMatchObject({ stages: ['rework-pr'] });
  });

  it('gitea-release ignores a release-published event with no trigger and other events with the reason', async () => {
    await harness();
    expect((await send('/webhook/gitea-release', 'release-published.json', 'release', 'release')).delivery?.verdict).toBe(
      'ignored: no trigger matches',
    );
    expect((await send('/webhook/gitea-release', 'issue_comment-created.json', 'issue_comment', 'issue_comment')).delivery?.verdict).toBe(
      'ignored: issue_comment events are not handled by /webhook/gitea-release',
    );
  });
});
