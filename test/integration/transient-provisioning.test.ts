import { spawn } from 'node:child_process';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULTS } from '../../src/runs/index.js';
import {
  createDispatcher,
  createRunEngine,
  createRunQueries,
  type Dispatcher,
  type RunService,
  type RunQueries,
} from '../../src/runs/index.js';
import { createLocalProvider, createMemoryProvider, transientErrorCode, type MemoryProvider } from '../../src/workspaces/index.js';
import { silentLogger } from '../helpers/logger.js';
import { createSandboxFixture, type SandboxFixture } from '../helpers/sandbox.js';
import { STORE_KINDS, type TestStore } from '../helpers/stores.js';
import { until } from '../helpers/until.js';

const available = Object.fromEntries(await Promise.all(STORE_KINDS.map(async (k) => [k.kind, await k.available()])));

/** What Node.js throws when a write finds the disk full, wrapped the way the local provider does. */
function diskFull(): Error {
  const errno = Object.assign(new Error("ENOSPC: no space left on device, open '/data/workspaces/x/runner.log'"), {
    code: 'ENOSPC',
    errno: -28,
    syscall: 'open',
  });
  return new Error('workspace x cannot be written: no space left on the device (ENOSPC)', { cause: errno });
}

describe.each(STORE_KINDS)('transient provisioning errors on $kind', ({ kind, create }) => {
  let t: TestStore;
  let engine: RunService;
  let queries: RunQueries;
  let provider: MemoryProvider;
  let dispatcher: Dispatcher;

  beforeEach(async (ctx) => {
    if (!available[kind]) ctx.skip();
    t = await create();
    await t.store.migrate();
    const queue = { ...DEFAULTS.queue, concurrency: 2, maxAttempts: 2, backoffBaseMs: 5, backoffMaxMs: 40, pollMs: 20 };
    engine = createRunEngine({ store: t.store, queue });
    queries = createRunQueries({ store: t.store, concurrency: queue.concurrency });
    provider = createMemoryProvider();
    dispatcher = createDispatcher({
      engine,
      runs: queries,
      store: t.store,
      provider,
      logger: silentLogger,
      workspaceName: (run) => `ws-${run.id}`,
      buildSpec: (run, name, callbackToken) => ({
        name,
        runId: run.id,
        stage: run.stage,
        owner: run.owner,
        repo: run.repo,
        callbackUrl: 'http://127.0.0.1/unused',
        callbackToken,
      }),
      leaseMs: 5_000,
      pollMs: 20,
    });
  });
  afterEach(async () => {
    await dispatcher?.stop();
    await provider?.close?.();
    await t?.cleanup();
  });

  it('a full disk makes runs wait past their attempts, and they run once it has room again', async () => {
    provider.failNextCreates(Number.MAX_SAFE_INTEGER, diskFull());
    const ids: number[] = [];
    for (let n = 1; n <= 3; n++) ids.push((await engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: n })).run.id);
    await dispatcher.start();
    // Witness: every run failed more often than its attempts allow, and is still waiting.
    await until(async () => {
      const runs = await Promise.all(ids.map((id) => queries.get(id)));
      return runs.every((r) => r && r.attempts > 3);
    }, 'every run to be retried past its two attempts');
    expect((await Promise.all(ids.map((id) => queries.get(id)))).map((r) => r?.status)).not.toContain('dead');

    provider.failNextCreates(0);
    await until(async () => (await queries.stats()).running === 2, 'two runs to start once the disk has room');
    // Whichever two got the slots (their backoff has jitter), each running run reports back, so
    // the third gets a slot too.
    await until(async () => {
      for (const run of await queries.list()) if (run.status === 'running') await engine.complete(run.id, { status: 'succeeded' });
      return (await queries.list()).every((r) => r.status === 'succeeded');
    }, 'every run to run and succeed');
    const events = await queries.events(ids[0]!);
    expect(events.map((e) => e.type)).not.toContain('run:dead');
    expect(events.find((e) => e.type === 'run:retrying')?.data).toMatchObject({
      transient: 'ENOSPC',
      error: expect.stringContaining('no space left on the device (ENOSPC)'),
    });
  }, 120_000);

  it('still ends a run dead when a failure that is not transient uses up its attempts', async () => {
    provider.failNextCreates(Number.MAX_SAFE_INTEGER, new Error('template is broken'));
    const { run } = await engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 1 });
    await dispatcher.start();
    const dead = await until(async () => {
      const current = await queries.get(run.id);
      return current?.status === 'dead' ? current : null;
    }, 'the run to be dead');
    expect(dead).toMatchObject({ attempts: 2, lastError: 'template is broken' });
  });
});

describe('the local provider', () => {
  let fixture: SandboxFixture;
  beforeEach(() => {
    fixture = createSandboxFixture();
  });
  afterEach(() => fixture.cleanup());

  it('reports running out of processes or descriptors as transient, and starts runs again after', async () => {
    let exhausted = true;
    const provider = createLocalProvider({
      dataDir: fixture.dataDir,
      command: [process.execPath, '-e', ''],
      sandbox: { kind: 'none' },
      spawn: (command, args, options) => {
        if (exhausted) throw Object.assign(new Error('spawn EAGAIN'), { code: 'EAGAIN', errno: -11, syscall: 'spawn' });
        return spawn(command, args, options);
      },
    });
    try {
      const spec = {
        name: 'ws-1',
        runId: 1,
        stage: 'develop',
        owner: 'acme',
        repo: 'app',
        callbackUrl: 'http://127.0.0.1/x',
        callbackToken: 't',
      };
      const error = await provider.create(spec).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(Error);
      expect(transientErrorCode(error)).toBe('EAGAIN');
      exhausted = false;
      expect(await provider.create(spec)).toMatchObject({ name: 'ws-1', status: 'running' });
      await until(async () => (await provider.get('ws-1'))?.status === 'stopped', 'the runner to finish');
      await provider.delete('ws-1');
    } finally {
      await provider.close?.();
    }
  });
});
