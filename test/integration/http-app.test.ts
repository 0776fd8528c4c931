import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/server/index.js';
import { createApp, type App } from '../../src/server/index.js';
import { createMemoryProvider, type MemoryProvider } from '../../src/workspaces/index.js';
import { silentLogger } from '../helpers/logger.js';
import { until } from '../helpers/until.js';

const ADMIN = 'baton_http-app-test-admin-token-000000';

describe('baton app over HTTP (SQLite, in-memory workspaces)', () => {
  let dir: string;
  let app: App;
  let provider: MemoryProvider;

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-app-'));
    const { config } = loadConfig(
      { BATON_DATA_DIR: dir, DATABASE_URL: `sqlite:${dir}/baton.db`, QUEUE_CONCURRENCY: '1', BATON_BOOTSTRAP_TOKEN: ADMIN },
      dir,
    );
    provider = createMemoryProvider();
    app = createApp(config, { logger: silentLogger, provider });
  });
  afterEach(async () => {
    await app.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const post = (url: string, body: unknown, token?: string) =>
    app.hono.request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });

  it('is alive at once and ready only once migrations are applied', async () => {
    expect((await app.hono.request('/health')).status).toBe(200);
    const before = await app.hono.request('/ready');
    expect(before.status).toBe(503);
    expect(await before.json()).toMatchObject({ ready: false, failing: ['migrations'] });
    // Webhooks need no database while the spool can take them: they are drained once it is migrated.
    expect((await app.hono.request('/ready/ingress')).status).toBe(200);
    await app.start();
    const after = await app.hono.request('/ready');
    expect(after.status).toBe(200);
    expect((await app.hono.request('/ready/ingress')).status).toBe(200);
  });

  it('keeps taking webhooks while it cannot run agents: /ready fails, /ready/ingress passes', async () => {
    const { config } = loadConfig({ BATON_DATA_DIR: dir, DATABASE_URL: `sqlite:${dir}/baton.db`, BATON_BOOTSTRAP_TOKEN: ADMIN }, dir);
    await app.stop();
    app = createApp(config, {
      logger: silentLogger,
      provider: { ...provider, health: () => ({ ok: false, reason: 'Coder rejected the token' }) },
    });
    await app.start();
    const all = await app.hono.request('/ready', { headers: { authorization: `Bearer ${ADMIN}` } });
    expect(all.status).toBe(503);
    expect(await all.json()).toMatchObject({ failing: ['provider memory'] });
    const ingress = await app.hono.request('/ready/ingress', { headers: { authorization: `Bearer ${ADMIN}` } });
    expect(ingress.status).toBe(200);
    expect((await ingress.json()) as { checks: { name: string }[] }).toMatchObject({
      ready: true,
      checks: [{ name: 'data directory' }, { name: 'spool' }, { name: 'disk space' }],
    });
  });

  it('names the data directory when it is not writable', async () => {
    const dataDir = path.join(dir, 'workspaces-root');
    const { config } = loadConfig({ BATON_DATA_DIR: dataDir, DATABASE_URL: `sqlite:${dir}/other.db` }, dir);
    await app.stop();
    app = createApp(config, { logger: silentLogger, provider });
    await app.start();
    expect((await app.hono.request('/ready')).status).toBe(200);
    // Even root cannot create files below a path that is a regular file.
    fs.rmSync(dataDir, { recursive: true });
    fs.writeFileSync(dataDir, 'not a directory');
    const res = await app.hono.request('/ready');
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ failing: ['data directory', 'spool'] });
    expect(await (await app.hono.request('/ready/ingress')).json()).toMatchObject({ failing: ['data directory', 'spool'] });
  });

  it('runs a queued run through a workspace to its authenticated completion and tears the workspace down', async () => {
    await app.start();
    const { run } = await app.engine.enqueue({
      stage: 'develop',
      owner: 'acme',
      repo: 'app',
      number: 7,
      payload: { account: 'dev', build: 'heavy', setupTokens: ['forge', 'bogus'] },
    });
    const running = await until(async () => {
      const r = await app.runs.get(run.id);
      return r?.status === 'running' ? r : null;
    }, 'run to be running');
    expect(provider.created).toHaveLength(1);
    const spec = provider.created[0]!;
    expect(spec.callbackUrl).toMatch(new RegExp(`/api/runs/${run.id}/complete$`));
    // The stage's grants reach the workspace as the pipeline table gave them; nothing else does.
    expect(spec).toMatchObject({ build: 'heavy', setupTokens: ['forge'] });

    expect((await app.hono.request('/queue')).status).toBe(401);
    const queue = (await (await app.hono.request('/queue', { headers: { authorization: `Bearer ${ADMIN}` } })).json()) as {
      activeWorkspaces: Record<string, unknown>;
    };
    expect(queue).toMatchObject({ pending: 0, active: 1, failed: 0, dead: 0, concurrency: 1, paused: false });
    expect(queue.activeWorkspaces['develop:acme/app#7']).toMatchObject({ workspaceName: running.workspaceName, runId: run.id });

    const body = {
      status: 'succeeded',
      exitCode: 0,
      summary: 'Opened PR #12',
      usage: { inputTokens: 100, outputTokens: 20 },
      costUsd: 0.12,
      durationMs: 4200,
    };
    expect((await post(`/api/runs/${run.id}/complete`, body)).status).toBe(401);
    expect((await post(`/api/runs/${run.id}/complete`, body, 'forged')).status).toBe(401);
    expect((await app.runs.get(run.id))?.status).toBe('running');

    const progress = await post(`/api/runs/${run.id}/progress`, { lines: ['cloning', 'running claude'] }, spec.callbackToken);
    expect(progress.status).toBe(202);

    const ok = await post(`/api/runs/${run.id}/complete`, body, spec.callbackToken);
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ status: 'succeeded', changed: true });
    const again = await post(`/webhook/task-complete/${spec.name}`, { status: 'failed' }, spec.callbackToken);
    expect(await again.json()).toMatchObject({ status: 'succeeded', changed: false });

    const done = await app.runs.get(run.id);
    expect(done).toMatchObject({ status: 'succeeded', summary: 'Opened PR #12', costUsd: 0.12, durationMs: 4200, exitCode: 0 });
    const events = await app.runs.events(run.id);
    expect(events.map((e) => e.type)).toEqual(['run:queued', 'run:claimed', 'run:started', 'run:progress', 'run:succeeded']);
    expect(events[3]!.data).toEqual({ lines: ['cloning', 'running claude'] });
    await until(async () => (await provider.get(spec.name)) === null, 'workspace to be deleted');
  });

  it("hands the workspace the stage's build kind and skipPermissions from the run", async () => {
    await app.start();
    await app.engine.enqueue({ stage: 'docs', owner: 'acme', repo: 'app', number: 3, payload: { build: 'heavy', skipPermissions: false } });
    await until(() => provider.created.length === 1, 'the workspace to be created');
    expect(provider.created[0]).toMatchObject({ stage: 'docs', build: 'heavy', skipPermissions: false });
  });

  it('answers bad callback bodies with 400 and a reason, without changing the run', async () => {
    await app.start();
    const { run } = await app.engine.enqueue({ stage: 'test', owner: 'acme', repo: 'app', number: 1 });
    await until(async () => (await app.runs.get(run.id))?.status === 'running', 'run to be running');
    const token = provider.created[0]!.callbackToken;
    const bad = await post(`/api/runs/${run.id}/complete`, '{not json', token);
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { message: string } }).error.message).toMatch(/invalid JSON/);
    const wrongStatus = await post(`/api/runs/${run.id}/complete`, { status: 'great' }, token);
    expect(((await wrongStatus.json()) as { error: { message: string } }).error.message).toBe(
      'status must be one of succeeded, failed, timed_out, got "great"',
    );
    expect((await app.runs.get(run.id))?.status).toBe('running');
    expect((await post('/webhook/task-complete/no-such-workspace', { status: 'succeeded' }, token)).status).toBe(401);
  });

  it('answers every error in one envelope: unknown routes, tokens first, then body limits', async () => {
    await app.start();
    const missing = await app.hono.request('/no/such/route');
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ error: { code: 'not_found', message: 'no route for GET /no/such/route' } });

    const { run } = await app.engine.enqueue({ stage: 'test', owner: 'acme', repo: 'app', number: 3 });
    await until(async () => (await app.runs.get(run.id))?.status === 'running', 'run to be running');
    const token = provider.created[0]!.callbackToken;
    const huge = JSON.stringify({ status: 'succeeded', summary: 'x'.repeat(1024 * 1024) });
    // Without the run's token the size does not matter: nothing is read.
    const anonymous = await post(`/api/runs/${run.id}/complete`, huge);
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toEqual({
      error: { code: 'unauthorized', message: expect.stringMatching(/^missing callback token: /) },
    });
    const tooLarge = await post(`/api/runs/${run.id}/complete`, huge, token);
    expect(tooLarge.status).toBe(413);
    expect(await tooLarge.json()).toEqual({ error: { code: 'too_large', message: 'body is larger than the limit of 1048576 bytes' } });
    expect((await app.runs.get(run.id))?.status).toBe('running');
  });

  it('retries a failing workspace create and keeps the error of the last attempt', async () => {
    const { config } = loadConfig({ BATON_DATA_DIR: dir, DATABASE_URL: `sqlite:${dir}/b2.db` }, dir);
    await app.stop();
    provider = createMemoryProvider();
    provider.failNextCreates(5, new Error('coder is down'));
    let now = Date.now();
    app = createApp(
      { ...config, queue: { ...config.queue, maxAttempts: 2, pollMs: 20 } },
      { logger: silentLogger, provider, now: () => now },
    );
    await app.start();
    const { run } = await app.engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 2 });
    const retrying = await until(async () => {
      const r = await app.runs.get(run.id);
      return r?.status === 'queued' && r.attempts === 1 ? r : null;
    }, 'first failure');
    expect(retrying.lastError).toBe('coder is down');
    now = retrying.runAt + 1;
    app.engine.wake();
    const dead = await until(async () => {
      const r = await app.runs.get(run.id);
      return r?.status === 'dead' ? r : null;
    }, 'run to be dead');
    expect(dead).toMatchObject({ attempts: 2, lastError: 'coder is down' });
  });
});
