import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { hashCallbackToken, type TaskRequest } from '../../src/runs/index.js';
import { ADMIN_TOKEN, bearer, startTestApp, type TestApp } from '../helpers/app.js';
import { STORE_KINDS, type TestStore } from '../helpers/stores.js';

const available = Object.fromEntries(await Promise.all(STORE_KINDS.map(async (k) => [k.kind, await k.available()])));

const task = (over: Partial<TaskRequest> = {}): TaskRequest => ({ stage: 'develop', owner: 'acme', repo: 'app', number: 7, ...over });

/** Every operator route; each must answer 401 without a valid token. */
const PROTECTED: Array<[string, string]> = [
  ['GET', '/api/runs'],
  ['POST', '/api/runs'],
  ['GET', '/api/runs/1'],
  ['POST', '/api/runs/1/retry'],
  ['POST', '/api/runs/1/cancel'],
  ['POST', '/api/queue/pause'],
  ['POST', '/api/queue/resume'],
  ['GET', '/api/queue/stats'],
  ['GET', '/api/events'],
  ['GET', '/api/deliveries'],
  ['GET', '/api/deliveries/1'],
  ['POST', '/api/deliveries/1/replay'],
  ['GET', '/queue'],
  ['GET', '/metrics'],
];

describe.each(STORE_KINDS)('runs API on $kind', ({ kind, create }) => {
  let t: TestStore;
  let server: TestApp;

  const call = (method: string, path: string, headers: Record<string, string> = bearer()) =>
    fetch(`${server.url}${path}`, { method, headers });

  beforeEach(async (ctx) => {
    if (!available[kind]) ctx.skip();
    t = await create();
    // Not started: the dispatcher stays off so the tests move runs through the engine themselves.
    server = await startTestApp(t, {
      start: false,
      env: { GITEA_URL: 'https://git.example.com', GITEA_DEV_TOKEN: 'x', GITEA_REVIEW_TOKEN: 'y' },
    });
    await t.store.migrate();
    await server.app.tokens.bootstrap(ADMIN_TOKEN);
  });
  afterEach(async () => {
    await server?.close();
    await t?.cleanup();
  });

  it('answers 401 with one message on every route for a missing, wrong or revoked token', async () => {
    const other = await server.app.tokens.create('ci');
    await server.app.tokens.revoke('ci');
    const bodies = new Set<string>();
    for (const [method, path] of PROTECTED) {
      const variants: Array<Record<string, string>> = [
        {},
        bearer('baton_wrong'),
        bearer(other.token),
        { authorization: 'Basic abc' },
        { cookie: 'baton_session=baton_wrong' },
      ];
      for (const headers of variants) {
        const response = await call(method, path, headers);
        expect(response.status, `${method} ${path} ${JSON.stringify(headers)}`).toBe(401);
        bodies.add(await response.text());
      }
    }
    expect(bodies.size).toBe(1);
    expect([...bodies][0]).not.toContain(other.token);
  });

  it('lets a live token through on every route', async () => {
    const { run } = await server.app.engine.enqueue(task());
    for (const [method, path] of PROTECTED) {
      if (path === '/api/events') continue;
      const response = await call(method, path.replace('/1', `/${run.id}`));
      expect(response.status, `${method} ${path}`).not.toBe(401);
    }
  });

  it('leaves the workspace callbacks to their own authentication', async () => {
    const { engine } = server.app;
    const { run } = await engine.enqueue(task());
    const [claim] = await engine.claim();
    await engine.recordWorkspace(run.id, claim!.leaseToken, {
      workspaceName: 'baton-cb',
      callbackTokenHash: hashCallbackToken('callback-secret'),
    });
    await engine.markRunning(run.id, claim!.leaseToken, { workspaceId: 'w' });
    const post = (path: string, token: string, body: unknown) =>
      fetch(`${server.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...bearer(token) },
        body: JSON.stringify(body),
      });

    // The run's callback token is enough; no API token is involved.
    expect((await post(`/api/runs/${run.id}/progress`, 'callback-secret', { lines: ['hi'] })).status).toBe(202);
    // And an API token is not a callback token.
    expect((await post(`/api/runs/${run.id}/complete`, ADMIN_TOKEN, { status: 'succeeded' })).status).toBe(401);
    expect((await post(`/api/runs/${run.id}/complete`, 'callback-secret', { status: 'succeeded' })).status).toBe(200);
  });

  it('lists runs newest first with filters and cursor pagination', async () => {
    for (let n = 1; n <= 5; n++) await server.app.engine.enqueue(task({ number: n }));
    await server.app.engine.enqueue(task({ repo: 'other', number: 1, stage: 'review-code' }));

    const first = (await (await call('GET', '/api/runs?limit=2&repo=acme/app')).json()) as {
      runs: Array<{ number: number }>;
      nextCursor: string | null;
    };
    expect(first.runs.map((r) => r.number)).toEqual([5, 4]);
    expect(first.nextCursor).not.toBeNull();
    const second = (await (await call('GET', `/api/runs?limit=2&repo=acme/app&cursor=${first.nextCursor}`)).json()) as typeof first;
    expect(second.runs.map((r) => r.number)).toEqual([3, 2]);
    const third = (await (await call('GET', `/api/runs?limit=2&repo=acme/app&cursor=${second.nextCursor}`)).json()) as typeof first;
    expect(third.runs.map((r) => r.number)).toEqual([1]);
    expect(third.nextCursor).toBeNull();

    const byStage = (await (await call('GET', '/api/runs?stage=review-code')).json()) as {
      runs: Array<{ repo: string; issueUrl: string }>;
    };
    expect(byStage.runs).toHaveLength(1);
    expect(byStage.runs[0]).toMatchObject({ repo: 'other', issueUrl: 'https://git.example.com/acme/other/issues/1' });
    const byIssue = (await (await call('GET', '/api/runs?repo=acme/app&number=3')).json()) as typeof first;
    expect(byIssue.runs.map((r) => r.number)).toEqual([3]);
    const byStatus = (await (await call('GET', '/api/runs?status=queued,cancelled')).json()) as typeof first;
    expect(byStatus.runs).toHaveLength(6);
    const none = (await (await call('GET', '/api/runs?status=succeeded')).json()) as typeof first;
    expect(none.runs).toHaveLength(0);
  });

  it('filters by a GitLab project in a subgroup, its namespace the owner, apart from a top-level namesake', async () => {
    await server.app.engine.enqueue(task({ owner: 'acme/platform', repo: 'app', number: 9, forge: 'gitlab' }));
    await server.app.engine.enqueue(task({ number: 3, forge: 'gitlab' }));
    const nested = (await (await call('GET', '/api/runs?repo=acme/platform/app')).json()) as {
      runs: Array<{ owner: string; number: number }>;
    };
    expect(nested.runs.map((r) => [r.owner, r.number])).toEqual([['acme/platform', 9]]);
  });

  it('filters by time and searches titles, errors and issue numbers, and pages a filter with a stable cursor', async () => {
    const { engine, runs: queries } = server.app;
    const a = await engine.enqueue(task({ number: 11, payload: { title: 'Fix the Login page' } }));
    const b = await engine.enqueue(task({ number: 12, stage: 'analyse', payload: { title: '100% of 50_ tests' } }));
    const c = await engine.enqueue(task({ number: 13, payload: { title: 'Unrelated' } }));
    await engine.cancel(c.run.id, 'cancelled: npm test failed in packages/api');
    const list = async (query: string) => {
      const response = await call('GET', `/api/runs?${query}`);
      expect(response.status, query).toBe(200);
      return ((await response.json()) as { runs: Array<{ id: number }>; nextCursor: string | null }).runs.map((r) => r.id);
    };
    // Case-insensitive substrings of the title or the error; % and _ are letters, not wildcards.
    expect(await list('q=login')).toEqual([a.run.id]);
    expect(await list('q=NPM%20TEST')).toEqual([c.run.id]);
    expect(await list(`q=${encodeURIComponent('100%')}`)).toEqual([b.run.id]);
    expect(await list('q=50_')).toEqual([b.run.id]);
    expect(await list('q=0_')).toEqual([b.run.id]);
    expect(await list('q=5%25')).toEqual([]);
    // A number, with or without #, is the issue's.
    expect(await list('q=%2312')).toEqual([b.run.id]);
    expect(await list('q=13')).toEqual([c.run.id]);
    expect(await list('q=login&stage=analyse')).toEqual([]);

    const created = (await queries.get(b.run.id))!.createdAt;
    expect(await list(`since=${created}&until=${created + 1}`)).toEqual(
      [a, b, c]
        .filter((r) => r.run.createdAt === created)
        .map((r) => r.run.id)
        .reverse(),
    );
    expect(await list(`since=${encodeURIComponent(new Date(created + 60_000).toISOString())}`)).toEqual([]);
    expect(await list(`until=${encodeURIComponent(new Date(created + 60_000).toISOString().replace('Z', '+00:00'))}`)).toHaveLength(3);

    // Keyset pages: a run queued between two pages does not shift the next one.
    const first = (await (await call('GET', '/api/runs?status=queued&limit=1')).json()) as {
      runs: Array<{ id: number }>;
      nextCursor: string;
    };
    expect(first.runs.map((r) => r.id)).toEqual([b.run.id]);
    await engine.enqueue(task({ number: 14 }));
    expect(await list(`status=queued&limit=1&cursor=${first.nextCursor}`)).toEqual([a.run.id]);
  });

  it('shows a failure in words with its kind and where to read how to fix it, and a cancellation as it was recorded', async () => {
    const { engine } = server.app;
    const { run } = await engine.enqueue(task());
    const [claim] = await engine.claim();
    await engine.recordWorkspace(run.id, claim!.leaseToken, { workspaceName: 'w', callbackTokenHash: 'x' });
    await engine.markRunning(run.id, claim!.leaseToken, { workspaceId: 'w-1' });
    await engine.complete(run.id, { status: 'failed', error: 'agent_error', summary: 'Not logged in · Please run /login' });
    const other = await engine.enqueue(task({ number: 8 }));
    await engine.cancel(other.run.id, 'no longer needed');
    const body = (await (await call('GET', '/api/runs')).json()) as { runs: Array<{ id: number; failure: unknown }> };
    const failureOf = (id: number) => body.runs.find((r) => r.id === id)!.failure;
    expect(failureOf(run.id)).toEqual({
      message: 'Not logged in · Please run /login',
      code: 'agent_error',
      help: 'docs/troubleshooting.md#not-logged-in',
    });
    expect(failureOf(other.run.id)).toEqual({ message: 'no longer needed', code: null, help: null });
  });

  it('shows the prompt its runner reported and its tokens and cost so far while it runs', async () => {
    const { engine } = server.app;
    const { run } = await engine.enqueue(task({ payload: { arguments: 'focus on the parser' } }));
    const [claim] = await engine.claim();
    await engine.recordWorkspace(run.id, claim!.leaseToken, {
      workspaceName: 'baton-p',
      callbackTokenHash: hashCallbackToken('cb-secret'),
    });
    await engine.markRunning(run.id, claim!.leaseToken, { workspaceId: 'w' });
    const progress = (body: unknown) =>
      fetch(`${server.url}/api/runs/${run.id}/progress`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...bearer('cb-secret') },
        body: JSON.stringify(body),
      });
    const prompt = {
      text: 'Implement issue 7: focus on the parser. Push to https://bot:hunter2@git.example.com/acme/app.git',
      arguments: 'focus on the parser',
      source: 'repository',
      file: '.claude/commands/develop.md',
      model: null,
    };
    expect((await progress({ lines: ['[baton] prompt from .claude/commands/develop.md'], prompt })).status).toBe(202);
    expect((await progress({ lines: ['working'], usage: { inputTokens: 300, outputTokens: 40 }, costUsd: 0.012 })).status).toBe(202);
    expect((await progress({ prompt: { text: 3 } })).status).toBe(400);

    const detail = async () =>
      (await (await call('GET', `/api/runs/${run.id}`)).json()) as {
        prompt: Record<string, unknown> | null;
        live: { tokens: number; costUsd: number } | null;
        timeline: Array<{ type: string }>;
        log: string;
      };
    const during = await detail();
    expect(during.prompt).toMatchObject({ arguments: 'focus on the parser', source: 'repository', file: '.claude/commands/develop.md' });
    // A credential in a URL never reaches the record.
    expect(during.prompt!.text).not.toContain('hunter2');
    expect(during.live).toMatchObject({ tokens: 340, costUsd: 0.012 });
    expect(during.timeline.map((e) => e.type)).not.toContain('run:prompt');
    expect(during.log).toBe('[baton] prompt from .claude/commands/develop.md\nworking');

    await engine.complete(run.id, { status: 'succeeded', usage: { inputTokens: 500, outputTokens: 60 }, costUsd: 0.02 });
    expect((await detail()).live).toBeNull();
  });

  it('rejects bad parameters with 400 naming the parameter', async () => {
    for (const [path, word] of [
      ['/api/runs?status=sleeping', 'status'],
      ['/api/runs?repo=noslash', 'repo'],
      ['/api/runs?cursor=abc', 'cursor'],
      ['/api/runs?limit=0', 'limit'],
      ['/api/runs?limit=5000', 'limit'],
      ['/api/runs?colour=red', 'colour'],
      ['/api/runs?since=yesterday', 'since'],
      ['/api/runs?until=2026-11-30T09:00:00', 'until'],
      ['/api/runs?since=2026-12-01&until=2026-11-30', 'since must be before until'],
      ['/api/runs?stage=a%20b', 'stage'],
      ['/api/runs?issue=0', 'issue'],
      [`/api/runs?q=${'x'.repeat(201)}`, 'q must be at most'],
      ['/api/runs/abc', 'run id'],
      ['/api/events?lastEventId=x', 'Last-Event-ID'],
    ] as const) {
      const response = await call('GET', path);
      expect(response.status, path).toBe(400);
      const body = (await response.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe('bad_request');
      expect(body.error.message).toContain(word);
    }
  });

  it('shows one run with its timeline, log, usage and cost', async () => {
    const { engine } = server.app;
    const { run } = await engine.enqueue(task());
    const [claim] = await engine.claim();
    await engine.recordWorkspace(run.id, claim!.leaseToken, { workspaceName: 'baton-1', callbackTokenHash: 'x' });
    await engine.markRunning(run.id, claim!.leaseToken, { workspaceId: 'w-1' });
    await engine.appendEvent(run.id, 'run:progress', { lines: ['cloning', 'running agent'] });
    await engine.appendEvent(run.id, 'run:progress', { lines: ['done'], usage: { inputTokens: 10 } });
    await engine.complete(run.id, {
      status: 'succeeded',
      summary: 'opened PR',
      usage: { inputTokens: 1000, outputTokens: 200 },
      costUsd: 0.42,
    });

    const response = await call('GET', `/api/runs/${run.id}`);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { run: Record<string, unknown>; timeline: Array<{ type: string }>; log: string };
    expect(body.run).toMatchObject({
      id: run.id,
      status: 'succeeded',
      summary: 'opened PR',
      tokens: 1200,
      costUsd: 0.42,
      workspaceName: 'baton-1',
    });
    expect(body.timeline.map((e) => e.type)).toEqual(['run:queued', 'run:claimed', 'run:started', 'run:succeeded']);
    expect(body.log).toBe('cloning\nrunning agent\ndone');

    const stats = (await (await call('GET', '/api/queue/stats')).json()) as {
      today: { tokens: number; costUsd: number; finished: number };
    };
    expect(stats.today).toMatchObject({ tokens: 1200, costUsd: 0.42, finished: 1 });
  });

  it("sums today's finished runs in the database as totalTokens counts them: odd usage fields count 0, runs of yesterday or still going none", async () => {
    const { engine } = server.app;
    const now = Date.now();
    const usages: Array<[string, unknown, number | null]> = [
      ['succeeded', { inputTokens: 1000, outputTokens: 200, cacheReadTokens: 5000 }, 0.5],
      ['failed', { inputTokens: '300', outputTokens: -7 }, 0.25],
      ['succeeded', { inputTokens: 40.5, outputTokens: null }, null],
      ['dead', [1, 2], null],
      ['cancelled', null, null],
    ];
    const ids: number[] = [];
    for (const [n, [status, usage, cost]] of usages.entries()) {
      const { run } = await engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 100 + n });
      ids.push(run.id);
      await t.store.db
        .updateTable('runs')
        .set({ status, usage: usage === null ? null : JSON.stringify(usage), cost_usd: cost, finished_at: now })
        .where('id', '=', run.id)
        .execute();
    }
    // Finished before today (UTC): not counted; still queued: not counted.
    const { run: yesterday } = await engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 200 });
    await t.store.db
      .updateTable('runs')
      .set({
        status: 'succeeded',
        usage: JSON.stringify({ inputTokens: 9, outputTokens: 9 }),
        cost_usd: 9,
        finished_at: now - 2 * 86_400_000,
      })
      .where('id', '=', yesterday.id)
      .execute();
    await engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 201 });

    const stats = (await (await call('GET', '/api/queue/stats')).json()) as { today: Record<string, number> };
    expect(stats.today).toMatchObject({ finished: 5, succeeded: 2, tokens: 1240.5, costUsd: 0.75 });
  });

  it('answers 404 for an unknown run and 409 with the reason for an illegal transition', async () => {
    for (const path of ['/api/runs/999', '/api/runs/999/retry', '/api/runs/999/cancel']) {
      const response = await call(path.endsWith('999') ? 'GET' : 'POST', path);
      expect(response.status, path).toBe(404);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe('not_found');
    }
    const { run } = await server.app.engine.enqueue(task());
    const retry = await call('POST', `/api/runs/${run.id}/retry`);
    expect(retry.status).toBe(409);
    expect(((await retry.json()) as { error: { message: string } }).error.message).toMatch(
      /is queued; only failed, dead, timed_out or cancelled runs can be retried/,
    );
  });

  it('cancels a live run, refuses a second cancel, and retries the cancelled run', async () => {
    const { run } = await server.app.engine.enqueue(task());
    const cancel = await call('POST', `/api/runs/${run.id}/cancel`);
    expect(cancel.status).toBe(200);
    expect(((await cancel.json()) as { run: { status: string } }).run.status).toBe('cancelled');
    const events = await server.app.runs.events(run.id);
    expect(events.at(-1)?.data).toMatchObject({ reason: expect.stringContaining('"admin"') });

    const again = await call('POST', `/api/runs/${run.id}/cancel`);
    expect(again.status).toBe(409);

    const retry = await call('POST', `/api/runs/${run.id}/retry`);
    expect(retry.status).toBe(200);
    expect(((await retry.json()) as { run: { status: string } }).run.status).toBe('queued');
  });

  it('cancelling a running run schedules its workspace teardown', async () => {
    const { engine, store } = server.app;
    const { run } = await engine.enqueue(task());
    const [claim] = await engine.claim();
    await engine.recordWorkspace(run.id, claim!.leaseToken, { workspaceName: 'baton-ws', callbackTokenHash: 'x' });
    await engine.markRunning(run.id, claim!.leaseToken, { workspaceId: 'w' });
    expect((await call('POST', `/api/runs/${run.id}/cancel`)).status).toBe(200);
    const teardowns = await store.db.selectFrom('teardowns').selectAll().execute();
    expect(teardowns.map((r) => [r.workspace_name, r.status])).toEqual([['baton-ws', 'pending']]);
  });

  it('pauses and resumes dispatch and reports queue statistics per stage', async () => {
    await server.app.engine.enqueue(task());
    await server.app.engine.enqueue(task({ stage: 'analyse' }));
    await server.app.engine.enqueue(task({ stage: 'analyse', number: 8 }));
    expect(await (await call('POST', '/api/queue/pause')).json()).toEqual({ paused: true });
    const paused = (await (await call('GET', '/api/queue/stats')).json()) as Record<string, unknown>;
    expect(paused).toMatchObject({ paused: true, queued: 3, running: 0, dead: 0 });
    expect(paused.stages).toEqual({
      develop: { queued: 1, held: 0, provisioning: 0, running: 0, dead: 0, failed: 0 },
      analyse: { queued: 2, held: 0, provisioning: 0, running: 0, dead: 0, failed: 0 },
    });
    expect(await server.app.engine.claim()).toEqual([]);
    expect(await (await call('POST', '/api/queue/resume')).json()).toEqual({ paused: false });
    expect(((await (await call('GET', '/api/queue/stats')).json()) as { paused: boolean }).paused).toBe(false);
  });
});

describe('public /queue and /metrics when baton.yaml opens them', () => {
  it('serves them without a token, and nothing else', async () => {
    const t = await STORE_KINDS[0]!.create();
    const server = await startTestApp(t, { file: 'api:\n  publicQueue: true\n  publicMetrics: true\n' });
    try {
      expect((await fetch(`${server.url}/queue`)).status).toBe(200);
      expect((await fetch(`${server.url}/metrics`)).status).toBe(200);
      expect((await fetch(`${server.url}/api/runs`)).status).toBe(401);
      expect((await fetch(`${server.url}/health`)).status).toBe(200);
    } finally {
      await server.close();
      await t.cleanup();
    }
  });
});
