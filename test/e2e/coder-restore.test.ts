import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULTS } from '../../src/runs/index.js';
import { createRunEngine, createRunQueries, type RunService, type Run, type RunQueries } from '../../src/runs/index.js';
import { createStore, type Store } from '../../src/store/index.js';
import { createFakeCoder, type FakeCoder } from '../fakes/coder/index.js';
import type { ServeHandle } from '../helpers/baton-bin.js';
import { startCoderServe } from '../helpers/coder-serve.js';
import { until } from '../helpers/until.js';

/**
 * A database restored from a backup (WORKSPACE_PROVIDER=coder, SQLite) gives run ids, and so
 * workspace names, out again while the workspaces of the runs it forgot still live in Coder. A
 * run adopts the workspace of its name only when the workspace's build carries the hash of one of
 * its own callback tokens (`callback_token_hash`): the forgotten run's is deleted and made again,
 * and the run's own, whose create a `kill -9` interrupted, is adopted after the restart.
 */

const isCreate = (r: { method: string; path: string }) => r.method === 'POST' && r.path === '/api/v2/users/me/workspaces';

describe('baton serve with the coder provider after a database restore', () => {
  let dir: string;
  let coder: FakeCoder;
  let store: Store | undefined;
  let engine: RunService;
  let runs: RunQueries;
  let server: ServeHandle | undefined;
  const dbFile = () => path.join(dir, 'baton.db');

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-coder-restore-'));
    coder = await createFakeCoder({ stepMs: 5 });
  });

  afterEach(async () => {
    await server?.stop('SIGKILL');
    server = undefined;
    await store?.close();
    store = undefined;
    await coder.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  async function startServer(): Promise<void> {
    server = await startCoderServe(coder, dir);
    // The test process enqueues and inspects through the same SQLite file the server uses.
    store = createStore({ url: `sqlite:${dbFile()}` });
    engine = createRunEngine({ store, queue: { ...DEFAULTS.queue, leaseMs: 1_000, pollMs: 100 } });
    runs = createRunQueries({ store, concurrency: DEFAULTS.queue.concurrency });
  }

  async function kill9(): Promise<void> {
    await server?.stop('SIGKILL');
    server = undefined;
    await store?.close();
    store = undefined;
  }

  const runById = async (id: number) => (await runs.get(id)) as Run;
  const complete = (runId: number, token: string | undefined) =>
    fetch(`${server?.url}/api/runs/${runId}/complete`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ status: 'succeeded', summary: 'done' }),
    });

  it("deletes and remakes the live workspace of a run the backup does not know, and adopts the run's own after a restart", async () => {
    await startServer();
    const backup = path.join(dir, 'backup.db');
    await sql`VACUUM INTO ${sql.lit(backup)}`.execute((store as Store).db);

    // The run the backup does not know: its workspace is up when the database is lost.
    const forgotten = (await engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 1 })).run;
    const name = (
      await until(async () => {
        const run = await runById(forgotten.id);
        return run.status === 'running' && run.workspaceName ? run : null;
      }, 'the forgotten run to be running')
    ).workspaceName as string;
    await until(() => coder.workspace(name)?.status === 'running', 'its workspace to be up');
    const theirs = coder.workspace(name)!;
    expect(theirs.buildParameters.callback_token_hash).toMatch(/^[0-9a-f]{64}$/);

    // Restore: the database file goes back to the backup, the Coder workspace lives on.
    await kill9();
    for (const suffix of ['', '-wal', '-shm']) fs.rmSync(`${dbFile()}${suffix}`, { force: true });
    fs.copyFileSync(backup, dbFile());
    // The restored run's second create (after the 409 and the delete) reaches Coder, but the
    // server dies before it reads the answer.
    let creates = 0;
    coder.faults.delayNext(1, 1_500, { match: (r) => isCreate(r) && ++creates === 2 });
    await startServer();

    const restored = (await engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 1 })).run;
    // The backup numbers runs again: the same id, and so the same workspace name.
    expect(restored.id).toBe(forgotten.id);
    await until(
      () => coder.requests.filter(isCreate).length === 3 && coder.requests.filter(isCreate).at(-1)?.status === 0,
      'the second create of the restored run to be in flight',
    );
    expect(coder.workspaces().find((w) => w.id === theirs.id)?.deleted).toBe(true);
    expect(server?.output()).toContain(`Coder workspace ${name} was made for another run`);
    // The forgotten runner's token speaks for no run any more.
    expect((await complete(restored.id, theirs.richParameters.callback_token)).status).toBe(401);

    await kill9();
    const ours = await until(() => {
      const ws = coder.workspace(name);
      return ws && !ws.deleted && ws.id !== theirs.id ? ws : null;
    }, 'Coder to finish the interrupted create');
    await until(async () => {
      const probe = createStore({ url: `sqlite:${dbFile()}` });
      try {
        const row = await probe.db.selectFrom('runs').select('lease_expires_at').where('id', '=', restored.id).executeTakeFirstOrThrow();
        return (row.lease_expires_at ?? 0) < Date.now();
      } finally {
        await probe.close();
      }
    }, 'the dead server’s lease on the restored run to expire');

    await startServer();
    await until(async () => (await runById(restored.id)).status === 'running', 'the restored run to be adopted');
    await coder.settle();
    // Adopted, not made a third time: its build carries the token of the attempt the kill cut short.
    expect(
      coder.requests.filter((r) => isCreate(r) && (r.body as { name?: string } | undefined)?.name === name).map((r) => r.status),
    ).toEqual([201, 409, 201, 409]);
    expect(coder.workspaces({ live: true }).map((w) => w.id)).toEqual([ours.id]);
    expect((await runById(restored.id)).workspaceId).toBe(ours.id);
    expect(ours.buildParameters.callback_token_hash).not.toBe(theirs.buildParameters.callback_token_hash);
    // Its runner reports with the token it was started with, which the run kept from that attempt.
    expect((await complete(restored.id, ours.richParameters.callback_token)).status).toBe(200);
    await until(async () => (await runById(restored.id)).status === 'succeeded', 'the restored run to succeed');
  }, 120_000);
});
