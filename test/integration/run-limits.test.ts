import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DURATION_GRACE_MS } from '../../src/budgets/index.js';
import { DEFAULTS } from '../../src/runs/index.js';
import { loadConfig } from '../../src/server/index.js';
import { createRunEngine, createRunQueries, createSweeper, type RunService, type RunQueries } from '../../src/runs/index.js';
import { createApp, type App } from '../../src/server/index.js';
import { buildWorkspaceSpec } from '../../src/server/workspaces.js';
import { runnerEnv } from '../../src/workspaces/index.js';
import { createFakeCoder, type FakeCoder } from '../fakes/coder/index.js';
import { silentLogger } from '../helpers/logger.js';
import { STORE_KINDS, type TestStore } from '../helpers/stores.js';
import { until } from '../helpers/until.js';

const available = Object.fromEntries(await Promise.all(STORE_KINDS.map(async (k) => [k.kind, await k.available()])));

/** A global cap and duration, and a stage (review-code) with its own. */
const LIMITS_YAML = `
webhooks:
  allow: ["acme/*"]
# Manual submissions are for repositories baton knows.
catchup:
  repositories: [acme/app]
limits:
  tokenCap: 100000
  maxDurationMinutes: 30
pipeline:
  stages:
    review-code: { tokenCap: 5000, maxDurationMinutes: 10 }
    test: { tokenCap: 0 }
`;

describe('per-run limits reach every workspace provider', () => {
  let dir: string;
  let coder: FakeCoder | undefined;
  let app: App | undefined;

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-limits-'));
    fs.writeFileSync(path.join(dir, 'baton.yaml'), LIMITS_YAML);
  });
  afterEach(async () => {
    await app?.stop();
    await coder?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const ADMIN = 'baton_limits-test-admin-token-0123456789';
  const bearer = { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' };

  it('sends each run’s cap and duration as the Coder template’s parameters, and shows them on the run', async () => {
    coder = await createFakeCoder({ stepMs: 2 });
    const { config } = loadConfig(
      {
        BATON_DATA_DIR: dir,
        DATABASE_URL: `sqlite:${dir}/baton.db`,
        BATON_BOOTSTRAP_TOKEN: ADMIN,
        WORKSPACE_PROVIDER: 'coder',
        CODER_URL: coder.url,
        CODER_TOKEN: coder.token,
        CODER_TEMPLATE_ID: coder.template.id,
        CALLBACK_URL: 'http://127.0.0.1:1',
        QUEUE_CONCURRENCY: '3',
        GITEA_URL: 'https://git.example.com',
        GITEA_DEV_TOKEN: 'dev-token-secret',
        GITEA_REVIEW_TOKEN: 'review-token-secret',
        BATON_CONFIG: path.join(dir, 'baton.yaml'),
      },
      dir,
    );
    app = createApp(config, { logger: silentLogger });
    await app.start();

    const submit = async (stage: string, number: number) => {
      const res = await app!.hono.request('/api/runs', {
        method: 'POST',
        headers: bearer,
        body: JSON.stringify({ stage, repository: 'acme/app', number }),
      });
      expect(res.status, await res.clone().text()).toBe(201);
      return ((await res.json()) as { run: { id: number } }).run.id;
    };
    const develop = await submit('develop', 1);
    const review = await submit('review-code', 2);
    const test = await submit('test', 3);

    const parameters = async (runId: number) => {
      const run = await until(async () => {
        const r = await app!.runs.get(runId);
        return r?.status === 'running' ? r : null;
      }, `run ${runId} to run`);
      return { run, workspace: coder!.workspace(run.workspaceName!)! };
    };

    const dev = await parameters(develop);
    expect(dev.workspace.richParameters).toMatchObject({ token_cap: '100000', max_duration_ms: String(30 * 60_000) });
    expect(dev.run.limits).toEqual({ tokenCap: 100_000, maxDurationMs: 30 * 60_000 });

    const rev = await parameters(review);
    expect(rev.workspace.richParameters).toMatchObject({ token_cap: '5000', max_duration_ms: String(10 * 60_000) });
    // Coder's autostop outlasts the run's own limit.
    expect(rev.workspace.ttlMs).toBeGreaterThan(10 * 60_000);

    // A stage that lifts the cap: no token_cap parameter at all (the template's empty default).
    const tst = await parameters(test);
    expect(tst.workspace.richParameters.token_cap).toBeUndefined();
    expect(tst.run.limits).toEqual({ tokenCap: null, maxDurationMs: 30 * 60_000 });

    const shown = await app.hono.request(`/api/runs/${review}`, { headers: bearer });
    expect(((await shown.json()) as { run: { limits: unknown } }).run.limits).toEqual({ tokenCap: 5000, maxDurationMs: 10 * 60_000 });
  });

  it('gives local workspaces the same numbers, as the runner’s variables', () => {
    const { config } = loadConfig({ BATON_DATA_DIR: dir, BATON_CONFIG: path.join(dir, 'baton.yaml') }, dir);
    const run = (stage: string) =>
      ({ id: 1, key: `${stage}-acme-app-1`, stage, owner: 'acme', repo: 'app', number: 1, payload: {} }) as Parameters<
        typeof buildWorkspaceSpec
      >[1];
    expect(runnerEnv(buildWorkspaceSpec(config, run('develop'), 'ws', 'tok'))).toMatchObject({
      BATON_TOKEN_CAP: '100000',
      BATON_MAX_DURATION_MS: String(30 * 60_000),
    });
    expect(runnerEnv(buildWorkspaceSpec(config, run('review-code'), 'ws', 'tok'))).toMatchObject({
      BATON_TOKEN_CAP: '5000',
      BATON_MAX_DURATION_MS: String(10 * 60_000),
    });
    expect(runnerEnv(buildWorkspaceSpec(config, run('test'), 'ws', 'tok')).BATON_TOKEN_CAP).toBeUndefined();
  });

  it('reads the global cap from BATON_TOKEN_CAP, as before, now for every provider', () => {
    const { config } = loadConfig({ BATON_DATA_DIR: dir, BATON_TOKEN_CAP: '7000', RUN_MAX_DURATION_MINUTES: '45' }, path.join(dir, 'none'));
    expect(config.limits).toEqual({ tokenCap: 7000, agentAttempts: 3, maxDurationMs: 45 * 60_000, replyWaitMs: 72 * 3_600_000 });
    // No longer passed through as the runner's own environment: the spec carries it.
    expect(config.agentEnv.BATON_TOKEN_CAP).toBeUndefined();
  });
});

describe.each(STORE_KINDS)('baton enforces the duration limit on $kind', ({ kind, create }) => {
  let t: TestStore;
  let clock: number;
  let engine: RunService;
  let runs: RunQueries;

  beforeEach(async (ctx) => {
    if (!available[kind]) ctx.skip();
    t = await create();
    await t.store.migrate();
    clock = 1_700_000_000_000;
    engine = createRunEngine({ store: t.store, queue: DEFAULTS.queue, now: () => clock });
    runs = createRunQueries({ store: t.store, concurrency: DEFAULTS.queue.concurrency });
  });
  afterEach(async () => {
    await t?.cleanup();
  });

  async function start(number: number, maxDurationMs?: number) {
    const { run } = await engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number });
    const [claim] = await engine.claim(1);
    await engine.recordWorkspace(run.id, claim!.leaseToken, { workspaceName: `ws-${number}`, callbackTokenHash: 'x', maxDurationMs });
    return engine.markRunning(run.id, claim!.leaseToken, { workspaceId: `id-${number}` });
  }

  it('ends a silent run timed_out once its own limit and the grace have passed, not before', async () => {
    const short = await start(1, 60_000);
    const long = await start(2, 60 * 60_000);
    const sweeper = createSweeper({ engine, logger: silentLogger, staleAfterMs: 120 * 60_000, now: () => clock });
    expect(await engine.nextDeadline(120 * 60_000)).toBe(short.startedAt! + 60_000 + DURATION_GRACE_MS);

    clock += 60_000 + DURATION_GRACE_MS - 1;
    expect((await sweeper.sweep()).timedOut).toBe(0);
    clock += 2;
    expect((await sweeper.sweep()).timedOut).toBe(1);

    const ended = await runs.get(short.id);
    expect(ended).toMatchObject({ status: 'timed_out', lastError: "no completion callback within the run's 1 minute duration limit" });
    expect((await runs.events(short.id)).at(-1)).toMatchObject({ type: 'run:timed_out', data: { limit: 'max_duration' } });
    expect((await runs.get(long.id))?.status).toBe('running');
    expect(await engine.nextDeadline(120 * 60_000)).toBe(long.startedAt! + 60 * 60_000 + DURATION_GRACE_MS);
  });

  it('holds a run claimed without a recorded limit to STALE_WORKSPACE_MINUTES', async () => {
    const old = await start(3);
    clock += 120 * 60_000 + DURATION_GRACE_MS + 1;
    const [ended] = await engine.timeOutOverdueRuns(120 * 60_000);
    expect(ended).toMatchObject({
      id: old.id,
      status: 'timed_out',
      lastError: 'no completion callback within 120 minutes (STALE_WORKSPACE_MINUTES)',
    });
  });
});
