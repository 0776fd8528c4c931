/**
 * What someone moving from the original orchestrator meets at run time: a forge that sends
 * webhooks to a baton without GITEA_URL turns /ready red, a callback from the original template
 * (no token) is told what to change, and /queue counts `elapsed` in seconds as the original did.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { hashCallbackToken } from '../../src/runs/index.js';
import { ADMIN_TOKEN, bearer, startTestApp, type TestApp } from '../helpers/app.js';
import { giteaHeaders, readFixture } from '../helpers/gitea-webhook.js';
import { createSqliteTestStore, type TestStore } from '../helpers/stores.js';

interface Ready {
  ready: boolean;
  checks: { name: string; ok: boolean; error?: string }[];
  failing?: string[];
}

describe('migrating from the original orchestrator, at run time', () => {
  let t: TestStore;
  let server: TestApp | undefined;

  beforeEach(async () => {
    t = await createSqliteTestStore();
  });
  afterEach(async () => {
    await server?.close();
    server = undefined;
    await t.cleanup();
  });

  const ready = async () => {
    // An operator's token: the reasons behind a failing check are shown only to operators.
    const response = await fetch(`${server!.url}/ready`, { headers: bearer(ADMIN_TOKEN) });
    return { status: response.status, body: (await response.json()) as Ready };
  };
  const deliver = (secret?: string, signWith?: string) => {
    const body = readFixture('issues-opened.json');
    const headers = giteaHeaders(body, { event: 'issues', eventType: 'issues', secret: signWith ?? secret });
    return fetch(`${server!.url}/webhook/gitea`, { method: 'POST', headers, body });
  };

  it('fails /ready once a forge webhook arrives without GITEA_URL, saying what to set', async () => {
    server = await startTestApp(t, { env: { WEBHOOK_SECRET: 'the-real-secret' } });
    expect((await ready()).status).toBe(200);
    expect((await deliver('the-real-secret')).status).toBe(202);
    const after = await ready();
    expect(after.status).toBe(503);
    expect(after.body.failing).toEqual(['forge']);
    expect(after.body.checks.find((c) => c.name === 'forge')?.error).toBe(
      'a webhook from the forge arrived, but GITEA_URL is not set: baton cannot post status comments or check permissions. ' +
        'Set GITEA_URL, GITEA_DEV_TOKEN and GITEA_REVIEW_TOKEN (see docs/gitea.md)',
    );
  });

  it('keeps /ready green when a refused (unsigned) request comes instead: only accepted deliveries count', async () => {
    server = await startTestApp(t, { env: { WEBHOOK_SECRET: 'the-real-secret' } });
    expect((await deliver(undefined, 'a-guessed-secret')).status).toBe(401);
    expect((await ready()).status).toBe(200);
    expect((await deliver('the-real-secret')).status).toBe(202);
    expect((await ready()).body.failing).toEqual(['forge']);
  });

  it('has no forge check with GITEA_URL set', async () => {
    server = await startTestApp(t, {
      env: { GITEA_URL: 'https://git.example.com', GITEA_DEV_TOKEN: 'd', GITEA_REVIEW_TOKEN: 'r', WEBHOOK_SECRET: 'the-real-secret' },
    });
    await server.app.engine.pause();
    expect((await deliver('the-real-secret')).status).toBe(202);
    const after = await ready();
    expect(after.status).toBe(200);
    expect(after.body.checks.map((c) => c.name)).not.toContain('forge');
  });

  it('tells a callback without a token to use baton’s template and points to the migration guide', async () => {
    server = await startTestApp(t, { start: false });
    await t.store.migrate();
    const { engine, runs } = server.app;
    const { run } = await engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 7 });
    const [claim] = await engine.claim();
    await engine.recordWorkspace(run.id, claim!.leaseToken, { workspaceName: 'orig-ws', callbackTokenHash: hashCallbackToken('real') });
    await engine.markRunning(run.id, claim!.leaseToken, { workspaceId: 'w' });

    // The original template's call: its path, no token, {"status":"complete"}.
    for (const path of ['/webhook/task-complete/orig-ws', `/api/runs/${run.id}/complete`]) {
      const response = await fetch(`${server.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"status":"complete"}',
      });
      expect(response.status, path).toBe(401);
      const { error } = (await response.json()) as { error: { code: string; message: string } };
      expect(error.code).toBe('unauthorized');
      expect(error.message).toMatch(/^missing callback token: the workspace must be created from baton's template \(deploy\/coder\/\)/);
      expect(error.message).toContain('docs/migrating.md');
    }
    // A wrong token is not told anything more.
    const wrong = await fetch(`${server.url}/webhook/task-complete/orig-ws`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer nope' },
      body: '{"status":"succeeded"}',
    });
    expect(((await wrong.json()) as { error: { message: string } }).error.message).toBe('missing or invalid callback token');
    expect((await runs.get(run.id))?.status).toBe('running');
  });

  it('reports elapsed in whole seconds on /queue, as the original did, and elapsedMs beside it', async () => {
    let now = Date.UTC(2026, 10, 30, 9, 0, 0);
    // Not started: no dispatcher claims the run before the test does.
    server = await startTestApp(t, { start: false, deps: { now: () => now } });
    await t.store.migrate();
    await server.app.tokens.bootstrap(ADMIN_TOKEN);
    const { engine } = server.app;
    const { run } = await engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 7 });
    const [claim] = await engine.claim();
    await engine.markRunning(run.id, claim!.leaseToken, { workspaceId: 'w-1' });
    now += 65_432;
    const queue = (await (await fetch(`${server.url}/queue`, { headers: bearer() })).json()) as {
      activeWorkspaces: Record<string, { elapsed: number; elapsedMs: number; workspaceId: string }>;
    };
    expect(queue.activeWorkspaces[run.key]).toMatchObject({ workspaceId: 'w-1', elapsed: 65, elapsedMs: 65_432 });
  });
});
