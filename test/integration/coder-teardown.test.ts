import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PermanentError } from '../../src/background/index.js';
import { createMemoryProvider, teardownWorkspace, TeardownIncompleteError, type CoderProvider } from '../../src/workspaces/index.js';
import { createFakeCoder, type FakeCoder } from '../fakes/coder/index.js';
import { until } from '../helpers/until.js';
import { fastProvider, specFor } from './coder-support.js';

let coder: FakeCoder;
let provider: CoderProvider;
beforeEach(async () => {
  coder = await createFakeCoder({ stepMs: 2 });
  provider = fastProvider(coder);
});
afterEach(async () => {
  await provider.close?.();
  await coder.close();
});

const fast = { pollMs: 2, waitStoppedMs: 2_000, waitGoneMs: 2_000 };
const isCancel = (r: { method: string; path: string }) => r.method === 'PATCH' && r.path.endsWith('/cancel');

async function statusById(id: string) {
  const res = await fetch(`${coder.url}/api/v2/workspaces/${id}`, { headers: { 'Coder-Session-Token': coder.token } });
  return res.status;
}

describe('teardownWorkspace with the coder provider', () => {
  it('stops, waits until stopped, deletes and confirms the workspace is gone', async () => {
    const ws = await provider.create(specFor('bt-w'));
    await provider.waitUntilRunning('bt-w');
    const result = await teardownWorkspace(provider, 'bt-w', fast);
    expect(result).toEqual({ outcome: 'deleted', stoppedCleanly: true });
    expect(coder.workspace('bt-w')).toMatchObject({ deleted: true, transitions: ['start', 'stop', 'delete'] });
    expect(await statusById(ws.id)).toBe(410);
  });

  it('is a no-op for a workspace that is already gone, so a retried job can call it again', async () => {
    expect(await teardownWorkspace(provider, 'bt-never', fast)).toEqual({ outcome: 'already-gone', stoppedCleanly: true });
    await provider.create(specFor('bt-w'));
    await provider.waitUntilRunning('bt-w');
    await teardownWorkspace(provider, 'bt-w', fast);
    expect(await teardownWorkspace(provider, 'bt-w', fast)).toEqual({ outcome: 'already-gone', stoppedCleanly: true });
  });

  it('deletes a failed workspace without stopping it first', async () => {
    coder.seedWorkspace({ name: 'bt-w', status: 'failed' });
    expect(await teardownWorkspace(provider, 'bt-w', fast)).toMatchObject({ outcome: 'deleted' });
    expect(coder.workspace('bt-w')?.transitions).toEqual(['start', 'delete']);
  });

  it('waits a bounded time for a stop stuck in stopping, then cancels it and deletes anyway', async () => {
    await provider.close?.();
    provider = fastProvider(coder, { activeBuildWaitMs: 40 });
    coder.seedWorkspace({ name: 'bt-w', status: 'running' });
    coder.faults.stickNextBuilds(1, 'stop');
    const result = await teardownWorkspace(provider, 'bt-w', { ...fast, waitStoppedMs: 50 });
    expect(result).toMatchObject({ outcome: 'deleted', stoppedCleanly: false, note: expect.stringContaining('not stopped after 50 ms') });
    expect(coder.workspace('bt-w')).toMatchObject({ deleted: true, transitions: ['start', 'stop', 'delete'] });
    expect(coder.requests.some((r) => r.method === 'PATCH' && r.path.endsWith('/cancel'))).toBe(true);
  });

  it('gives up retryably, without calling the provider unhealthy, when the stuck build may not be cancelled', async () => {
    await provider.close?.();
    provider = fastProvider(coder, { activeBuildWaitMs: 30 });
    coder.seedWorkspace({ name: 'bt-w', status: 'stopping', stuck: true });
    coder.faults.failNext(1, {
      status: 403,
      body: { message: 'User is not allowed to cancel workspace builds.' },
      match: (r) => r.method === 'PATCH',
    });
    const error = await teardownWorkspace(provider, 'bt-w', { ...fast, waitStoppedMs: 20 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(error).not.toBeInstanceOf(PermanentError);
    expect((error as Error).message).toMatch(/a stop build is still active \(stopping\)/);
    expect(provider.health()).toEqual({ ok: true });
    expect(coder.workspace('bt-w')?.deleted).toBe(false);
  });

  it('goes on when the cancel finds the stuck build already finished (400 "Job has already completed!")', async () => {
    await provider.close?.();
    provider = fastProvider(coder, { activeBuildWaitMs: 40 });
    coder.seedWorkspace({ name: 'bt-w', status: 'running' });
    coder.faults.stickNextBuilds(1, 'stop');
    const cancel = coder.faults.pauseNext({ match: isCancel });
    const teardown = teardownWorkspace(provider, 'bt-w', { ...fast, waitStoppedMs: 50 });
    await Promise.race([cancel.reached, teardown]);
    // The stop finishes between baton's last read and Coder handling the cancel.
    coder.faults.releaseStuckBuilds();
    await until(() => coder.workspace('bt-w')?.status === 'stopped', 'the stuck stop to finish');
    cancel.release();
    expect(await teardown).toMatchObject({ outcome: 'deleted' });
    expect(coder.requests.filter(isCancel).map((r) => r.status)).toEqual([400]);
    expect(coder.workspace('bt-w')).toMatchObject({ deleted: true, transitions: ['start', 'stop', 'delete'] });
  });

  it('goes on when a retried cancel, whose first answer was lost, gets 400 "already been marked as canceled"', async () => {
    await provider.close?.();
    provider = fastProvider(coder, { activeBuildWaitMs: 40 });
    coder.seedWorkspace({ name: 'bt-w', status: 'running' });
    coder.faults.stickNextBuilds(1, 'stop');
    const first = coder.faults.pauseNext({ match: isCancel });
    const retry = coder.faults.pauseNext({ match: isCancel });
    coder.faults.dropNext(1, { afterHandling: true, match: isCancel });
    const teardown = teardownWorkspace(provider, 'bt-w', { ...fast, waitStoppedMs: 50 });
    await Promise.race([first.reached, teardown]);
    // Keep the job in `canceling` (its provisioner has not confirmed) while the retry arrives.
    coder.faults.holdBuilds(true);
    first.release();
    await retry.reached;
    retry.release();
    await until(() => coder.requests.filter(isCancel).at(-1)?.status === 400, 'the retried cancel to be answered');
    expect(coder.workspace('bt-w')?.status).toBe('canceling');
    coder.faults.holdBuilds(false);
    expect(await teardown).toMatchObject({ outcome: 'deleted' });
    expect(coder.requests.filter(isCancel).map((r) => r.status)).toEqual(['dropped', 400]);
    expect(coder.workspace('bt-w')).toMatchObject({ deleted: true, transitions: ['start', 'stop', 'delete'] });
  });

  it('reports an incomplete teardown when the delete does not finish in time', async () => {
    coder.seedWorkspace({ name: 'bt-w', status: 'stopped' });
    coder.faults.stickNextBuilds(1, 'delete');
    const error = await teardownWorkspace(provider, 'bt-w', { ...fast, waitGoneMs: 30 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TeardownIncompleteError);
    expect((error as Error).message).toMatch(/"bt-w" still exists \(deleting\)/);
  });

  it('passes a permanent error through (bad token), so the job stops retrying', async () => {
    coder.seedWorkspace({ name: 'bt-w' });
    await provider.close?.();
    provider = fastProvider(coder, { token: 'wrong' });
    await expect(teardownWorkspace(provider, 'bt-w', fast)).rejects.toBeInstanceOf(PermanentError);
  });
});

describe('teardownWorkspace is provider-agnostic', () => {
  it('tears down a memory workspace', async () => {
    const memory = createMemoryProvider({ transitionMs: 1 });
    await memory.create(specFor('bt-m'));
    await until(async () => (await memory.get('bt-m'))?.status === 'running', 'the memory workspace to run');
    expect(await teardownWorkspace(memory, 'bt-m', fast)).toMatchObject({ outcome: 'deleted' });
    expect(await memory.get('bt-m')).toBeNull();
    await memory.close?.();
  });
});
