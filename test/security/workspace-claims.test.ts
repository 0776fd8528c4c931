import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/server/index.js';
import { createApp, type App } from '../../src/server/index.js';
import { createMemoryProvider, type MemoryProvider } from '../../src/workspaces/index.js';
import { silentLogger } from '../helpers/logger.js';
import { until } from '../helpers/until.js';

const ADMIN = 'baton_workspace-claims-admin-token-0000';

/**
 * Usage and cost arrive from the workspace, which the agent controls: a negative count must never
 * credit a daily budget (one run reporting -5,000,000,000 input tokens switched every budget off).
 */
describe('usage and cost from a workspace are claims', () => {
  let dir: string;
  let app: App;
  let provider: MemoryProvider;

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-claims-'));
    fs.writeFileSync(path.join(dir, 'baton.yaml'), 'budgets:\n  tokensPerDay: 100000\n  costUsdPerDay: 50\n');
    const { config } = loadConfig(
      { BATON_DATA_DIR: dir, DATABASE_URL: `sqlite:${dir}/baton.db`, QUEUE_CONCURRENCY: '1', BATON_BOOTSTRAP_TOKEN: ADMIN },
      dir,
    );
    provider = createMemoryProvider();
    app = createApp(config, { logger: silentLogger, provider });
    await app.start();
  });
  afterEach(async () => {
    await app?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const post = (url: string, body: unknown, token: string) =>
    app.hono.request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify(body),
    });

  async function runningRun(number: number) {
    const { run } = await app.engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number });
    await until(async () => (await app.runs.get(run.id))?.status === 'running', 'run to be running');
    const spec = provider.created.find((s) => s.runId === run.id)!;
    return { id: run.id, token: spec.callbackToken };
  }
  const logOf = async (id: number) =>
    (await app.runs.events(id)).flatMap((e) => (e.type === 'run:progress' ? ((e.data?.lines as string[] | undefined) ?? []) : []));
  const used = async () => {
    const res = await app.hono.request('/api/budgets', { headers: { authorization: `Bearer ${ADMIN}` } });
    const body = (await res.json()) as { budgets: { scope: string; tokens: { used: number }; costUsd: { used: number } }[] };
    const global = body.budgets.find((b) => b.scope === 'global')!;
    return { tokens: global.tokens.used, costUsd: global.costUsd.used };
  };

  it('counts a negative, infinite-looking or absurd completion as zero, says so in the run log, and never credits the budget', async () => {
    const honest = await runningRun(1);
    const ok = await post(
      `/api/runs/${honest.id}/complete`,
      { status: 'succeeded', usage: { inputTokens: 600 }, costUsd: 1 },
      honest.token,
    );
    expect(ok.status).toBe(200);
    expect(await used()).toEqual({ tokens: 600, costUsd: 1 });

    const cheat = await runningRun(2);
    const progress = await post(
      `/api/runs/${cheat.id}/progress`,
      { lines: ['working'], usage: { inputTokens: -1e9, outputTokens: 3 }, costUsd: -4 },
      cheat.token,
    );
    expect(progress.status).toBe(202);
    const done = await post(
      `/api/runs/${cheat.id}/complete`,
      { status: 'succeeded', usage: { inputTokens: -5_000_000_000, outputTokens: 1e300 }, costUsd: -100 },
      cheat.token,
    );
    expect(done.status).toBe(200);

    const log = await logOf(cheat.id);
    expect(log).toContain('working');
    expect(log).toContainEqual(
      expect.stringMatching(/^\[baton\] refused progress usage\.inputTokens = -1000000000 from the workspace: .* counts as 0$/),
    );
    expect(log).toContainEqual(expect.stringMatching(/^\[baton\] refused progress costUsd = -4 /));
    expect(log).toContainEqual(expect.stringMatching(/^\[baton\] refused completion usage\.inputTokens = -5000000000 /));
    expect(log).toContainEqual(expect.stringMatching(/^\[baton\] refused completion usage\.outputTokens = 1e\+300 /));
    expect(log).toContainEqual(expect.stringMatching(/^\[baton\] refused completion costUsd = -100 /));

    const stored = (await app.runs.get(cheat.id))!;
    expect(stored.status).toBe('succeeded');
    expect(stored.usage).toEqual({});
    expect(stored.costUsd).toBeNull();
    // The honest run's spending still stands: the budget was not credited.
    expect(await used()).toEqual({ tokens: 600, costUsd: 1 });
  });
});
