import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/server/index.js';
import { tokenCommand } from '../../src/cli/token-commands.js';
import type { CommandIo } from '../../src/cli/index.js';
import { ADMIN_TOKEN, bearer, startTestApp, type TestApp } from '../helpers/app.js';
import { createSqliteTestStore, type TestStore } from '../helpers/stores.js';

/**
 * It was reported: "Every token is an admin token." A token minted for a dashboard on the wall could
 * retry, cancel, pause and replay. Now each token has a scope, and every route that changes
 * something asks for more than `read`.
 */
describe('scoped API tokens', () => {
  let t: TestStore;
  let server: TestApp;

  beforeEach(async () => {
    t = await createSqliteTestStore();
    server = await startTestApp(t);
    await server.app.engine.pause();
  });
  afterEach(async () => {
    await server?.close();
    await t?.cleanup();
  });

  const call = (method: string, path: string, token: string) =>
    fetch(`${server.url}${path}`, {
      method,
      headers: { ...bearer(token), 'content-type': 'application/json' },
      body: method === 'GET' ? undefined : '{}',
    });

  it('lets a read token read and change nothing, whatever route it tries', async () => {
    const { token } = await server.app.tokens.create('wallboard', 'read');
    const { run } = await server.app.engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 7 });
    for (const path of ['/api/runs', `/api/runs/${run.id}`, '/api/queue/stats', '/queue', '/metrics', '/api/me']) {
      expect((await call('GET', path, token)).status, path).toBe(200);
    }
    // Every change: the operator actions of today, and routes added later (run submission, delivery
    // replay) are covered by the same rule before they exist.
    for (const path of [`/api/runs/${run.id}/cancel`, '/api/queue/resume', '/api/queue/pause', '/api/runs', '/api/deliveries/1/replay']) {
      const answer = await call('POST', path, token);
      expect(answer.status, path).toBe(403);
      expect(await answer.json()).toEqual({
        error: {
          code: 'forbidden',
          message: `this token's scope is read; POST ${path} needs operate (mint one with "baton token create --name NAME --scope operate")`,
        },
      });
    }
    expect((await server.app.runs.get(run.id))?.status).toBe('queued');
    expect((await server.app.runs.stats()).paused).toBe(true);
    expect((await call('GET', '/api/tokens', token)).status).toBe(403);
  });

  it('lets an operate token act on runs and the queue, and only admin manage tokens', async () => {
    const { token } = await server.app.tokens.create('ci', 'operate');
    const { run } = await server.app.engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 7 });
    expect((await call('POST', `/api/runs/${run.id}/cancel`, token)).status).toBe(200);
    expect((await call('POST', `/api/runs/${run.id}/retry`, token)).status).toBe(200);
    expect((await call('POST', '/api/queue/resume', token)).status).toBe(200);
    expect((await call('GET', '/api/tokens', token)).status).toBe(403);

    const listed = await call('GET', '/api/tokens', ADMIN_TOKEN);
    expect(listed.status).toBe(200);
    const body = (await listed.json()) as { tokens: Array<{ name: string; scope: string; hint: string | null }> };
    expect(body.tokens.map((x) => [x.name, x.scope])).toEqual([
      ['admin', 'admin'],
      ['ci', 'operate'],
    ]);
    expect(JSON.stringify(body)).not.toContain(token);
    expect(JSON.stringify(body)).not.toContain(ADMIN_TOKEN.slice(0, 10));
    expect(await (await call('GET', '/api/me', token)).json()).toEqual({ token: { id: 2, name: 'ci', scope: 'operate' }, session: null });
  });

  it('mints tokens with a scope from the CLI (read unless told) and lists it', async () => {
    const config = loadConfig({ DATABASE_URL: t.url, BATON_DATA_DIR: server.dataDir }, server.dataDir).config;
    const run = async (...argv: string[]) => {
      const out: string[] = [];
      const err: string[] = [];
      const io: CommandIo = { out: (x) => out.push(x), err: (x) => err.push(x), env: {} };
      return { code: await tokenCommand(argv, io, () => config), out, err };
    };
    const viewer = await run('create', '--name', 'viewer');
    expect(viewer.err[0]).toContain('scope read');
    const deployer = await run('create', '--name', 'deployer', '--scope', 'operate');
    expect(deployer.code).toBe(0);
    await expect(run('create', '--name', 'x', '--scope', 'root')).rejects.toThrow(
      /--scope must be one of read, operate, submit:arguments, admin, got "root"/,
    );
    const list = (await run('list')).out.join('\n');
    expect(list).toMatch(/^ID\s+NAME\s+SCOPE\s+TOKEN/);
    expect(list).toMatch(/admin\s+admin\s+\(supplied\)/);
    expect(list).toMatch(/viewer\s+read\s+baton_/);
    expect(list).toMatch(/deployer\s+operate\s+baton_/);
    expect((await call('POST', '/api/queue/resume', viewer.out[0]!)).status).toBe(403);
    expect((await call('POST', '/api/queue/resume', deployer.out[0]!)).status).toBe(200);
  });
});
