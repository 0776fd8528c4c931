import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/server/index.js';
import { createApp, type App } from '../../src/server/index.js';
import { createFakeCoder, type FakeCoder } from '../fakes/coder/index.js';
import { silentLogger } from '../helpers/logger.js';
import { until } from '../helpers/until.js';

describe('baton app with WORKSPACE_PROVIDER=coder', () => {
  let dir: string;
  let coder: FakeCoder;
  let app: App | undefined;

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-coder-app-'));
    coder = await createFakeCoder({ stepMs: 2 });
  });
  afterEach(async () => {
    await app?.stop();
    await coder.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const ADMIN = 'baton_coder-app-test-admin-token-0123456789';

  function makeApp(token: string): App {
    const { config } = loadConfig(
      {
        BATON_DATA_DIR: dir,
        DATABASE_URL: `sqlite:${dir}/baton.db`,
        BATON_BOOTSTRAP_TOKEN: ADMIN,
        WORKSPACE_PROVIDER: 'coder',
        CODER_URL: coder.url,
        CODER_TOKEN: token,
        CODER_TEMPLATE_ID: coder.template.id,
        // Required with Coder; these fake workspaces never call back.
        CALLBACK_URL: 'http://127.0.0.1:1',
      },
      dir,
    );
    return createApp(config, { logger: silentLogger });
  }

  /** With a token: why a check fails is said only to operators. */
  async function readiness(a: App) {
    const res = await a.hono.request('/ready', { headers: { authorization: `Bearer ${ADMIN}` } });
    return { status: res.status, body: (await res.json()) as { failing?: string[]; checks: { name: string; error?: string }[] } };
  }

  it('uses the coder provider and reconciles at start, deleting a leftover stopped workspace', async () => {
    coder.seedWorkspace({ name: 'baton-99', status: 'stopped' });
    coder.seedWorkspace({ name: 'my-dev-box', status: 'stopped' });
    app = makeApp(coder.token);
    expect(app.provider.name).toBe('coder');
    await app.start();
    await until(() => coder.workspace('baton-99')?.deleted, 'the leftover workspace to be deleted');
    expect(coder.workspace('my-dev-box')).toMatchObject({ deleted: false, transitions: ['start', 'stop'] });
    expect((await readiness(app)).status).toBe(200);
  });

  it('turns /ready to 503 naming the provider when Coder rejects the token', async () => {
    app = makeApp('a-wrong-token');
    await app.start();
    const ready = await until(async () => {
      const r = await readiness(app!);
      return r.status === 503 ? r : null;
    }, '/ready to fail on the rejected token');
    expect(ready.body.failing).toEqual(['provider coder']);
    const check = ready.body.checks.find((c) => c.name === 'provider coder');
    expect(check?.error).toMatch(/Coder rejected the session token \(check CODER_TOKEN\): HTTP 401/);
    expect(JSON.stringify(ready.body)).not.toContain('a-wrong-token');
  });
});
