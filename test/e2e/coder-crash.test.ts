import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULTS } from '../../src/runs/index.js';
import { createRunEngine, createRunQueries, type RunService, type Run, type RunQueries } from '../../src/runs/index.js';
import { createStore, type Store } from '../../src/store/index.js';
import { createFakeCoder, type FakeCoder } from '../fakes/coder/index.js';
import type { ServeHandle } from '../helpers/baton-bin.js';
import { startCoderServe } from '../helpers/coder-serve.js';
import { until } from '../helpers/until.js';

/**
 * `kill -9` of `baton serve` (WORKSPACE_PROVIDER=coder, SQLite) while a workspace is being
 * created and while another is being torn down; after a restart there must be exactly one
 * workspace per live run and none for finished runs.
 */

describe('baton serve with the coder provider survives kill -9', () => {
  let dir: string;
  let coder: FakeCoder;
  let store: Store;
  let engine: RunService;
  let runs: RunQueries;
  let server: ServeHandle | undefined;

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-coder-crash-'));
    coder = await createFakeCoder({ stepMs: 5 });
  });

  afterEach(async () => {
    await server?.stop('SIGKILL');
    server = undefined;
    await store?.close();
    await coder.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  async function startServer(): Promise<void> {
    server = await startCoderServe(coder, dir);
  }

  async function kill9(): Promise<void> {
    await server?.stop('SIGKILL');
    server = undefined;
  }

  const runById = async (id: number) => (await runs.get(id)) as Run;
  const liveWorkspaces = () => coder.workspaces({ live: true });

  it('leaves exactly one workspace per live run and none for finished runs', async () => {
    await startServer();
    // The test process enqueues and inspects through the same SQLite file the server uses.
    store = createStore({ url: `sqlite:${path.join(dir, 'baton.db')}` });
    engine = createRunEngine({ store, queue: { ...DEFAULTS.queue, leaseMs: 1_000, pollMs: 100 } });
    runs = createRunQueries({ store, concurrency: DEFAULTS.queue.concurrency });

    // A run that will finish, its teardown cut short by the crash.
    const finishing = (await engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 1 })).run;
    const running = await until(async () => {
      const run = await runById(finishing.id);
      return run.status === 'running' && run.workspaceName ? run : null;
    }, 'the first run to be running');
    const finishingName = running.workspaceName as string;
    await until(() => coder.workspace(finishingName)?.status === 'running', 'its workspace to be up');

    coder.faults.holdBuilds(true);
    const callbackToken = coder.workspace(finishingName)?.richParameters.callback_token;
    const done = await fetch(`${server?.url}/api/runs/${finishing.id}/complete`, {
      method: 'POST',
      headers: { authorization: `Bearer ${callbackToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ status: 'succeeded', summary: 'done' }),
    });
    expect(done.status).toBe(200);
    await until(() => coder.workspace(finishingName)?.transitions.includes('stop'), 'teardown to request the stop');

    // A run whose create reaches Coder but whose answer the server never reads.
    coder.faults.delayNext(1, 1_500, { match: (r) => r.method === 'POST' && r.path === '/api/v2/users/me/workspaces' });
    const creating = (await engine.enqueue({ stage: 'review-code', owner: 'acme', repo: 'app', number: 2 })).run;
    await until(
      () => coder.requests.some((r) => r.method === 'POST' && r.path === '/api/v2/users/me/workspaces' && r.status === 0),
      'the create to be in flight',
    );

    await kill9();
    coder.faults.holdBuilds(false);
    const creatingName = (await runById(creating.id)).workspaceName as string;
    expect(creatingName).toBeTruthy();
    await until(() => coder.workspace(creatingName), 'Coder to finish the orphaned create');
    await until(() => coder.workspace(finishingName)?.status === 'stopped', 'the interrupted stop to finish');
    // Let the dead server's provisioning lease (1 s) run out before restarting.
    const leaseOf = async () =>
      (await store.db.selectFrom('runs').select('lease_expires_at').where('id', '=', creating.id).executeTakeFirstOrThrow())
        .lease_expires_at;
    await until(async () => ((await leaseOf()) ?? 0) < Date.now(), 'the dead server’s lease on the interrupted run to expire');

    await startServer();
    await until(async () => (await runById(creating.id)).status === 'running', 'the interrupted run to be adopted');
    await until(() => coder.workspace(finishingName)?.deleted, 'the finished run’s workspace to be deleted');
    await coder.settle();

    const live = await runs.listLive();
    expect(live.map((r) => r.id)).toEqual([creating.id]);
    expect(liveWorkspaces().map((w) => w.name)).toEqual([creatingName]);
    // Adopted, not recreated: the restarted server's create met 409 and took the workspace over.
    const creates = coder.requests.filter((r) => r.method === 'POST' && (r.body as { name?: string } | undefined)?.name === creatingName);
    expect(creates.map((r) => r.status)).toEqual([201, 409]);
    expect(coder.workspaces().filter((w) => w.name === creatingName)).toHaveLength(1);
    expect((await runById(creating.id)).workspaceId).toBe(coder.workspace(creatingName)?.id);
    expect((await runById(finishing.id)).status).toBe('succeeded');
  }, 90_000);
});
