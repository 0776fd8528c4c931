import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { reconcile, type CoderProvider, type ReconcileRuns } from '../../src/workspaces/index.js';
import { createFakeCoder, type FakeCoder } from '../fakes/coder/index.js';
import { fastProvider, HOUR } from './coder-support.js';

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

type LiveRun = { id: number; status: string; workspaceName: string | null };

function fakeRuns(live: LiveRun[], options: { failRunError?: number } = {}) {
  const adopted: [number, string][] = [];
  const failed: [number, string][] = [];
  const runs: ReconcileRuns = {
    listLive: async () => live,
    adopt: async (id, workspaceId) => {
      adopted.push([id, workspaceId]);
    },
    failRun: async (id, reason) => {
      if (id === options.failRunError) throw new Error('database is locked');
      failed.push([id, reason]);
    },
  };
  return { runs, adopted, failed };
}

const byName = (results: { name: string }[]) => Object.fromEntries(results.map((r) => [r.name, r]));

describe('reconcile with the coder provider', () => {
  it('adopts, keeps, fails and deletes per workspace, and never touches anybody else’s', async () => {
    const adoptMe = coder.seedWorkspace({ name: 'bt-adopt' });
    coder.seedWorkspace({ name: 'bt-kept' });
    coder.seedWorkspace({ name: 'bt-stopped-live', status: 'stopped' });
    coder.seedWorkspace({ name: 'bt-orphan-stopped', status: 'stopped' });
    coder.seedWorkspace({ name: 'bt-orphan-failed', status: 'failed' });
    coder.seedWorkspace({ name: 'bt-orphan-old', createdAt: Date.now() - 2 * HOUR });
    coder.seedWorkspace({ name: 'bt-orphan-young' });
    coder.seedWorkspace({ name: 'bt-deleting', status: 'deleting', stuck: true });
    coder.seedWorkspace({ name: 'bt-queued-failed', status: 'failed' });
    // Not baton's: another name, another owner, another template.
    coder.seedWorkspace({ name: 'my-dev-box', status: 'stopped' });
    coder.seedWorkspace({ name: 'bt-alices', owner: 'alice', status: 'stopped' });
    coder.seedWorkspace({ name: 'bt-other-template', templateId: coder.addTemplate('other').id, status: 'stopped' });

    const { runs, adopted, failed } = fakeRuns([
      { id: 1, status: 'provisioning', workspaceName: 'bt-adopt' },
      { id: 2, status: 'running', workspaceName: 'bt-kept' },
      { id: 3, status: 'running', workspaceName: 'bt-stopped-live' },
      { id: 4, status: 'running', workspaceName: 'bt-vanished' },
      { id: 5, status: 'queued', workspaceName: 'bt-queued-failed' },
      { id: 6, status: 'queued', workspaceName: null },
    ]);
    const { results } = await reconcile({ provider, runs });
    const r = byName(results);

    expect(r['bt-adopt']).toMatchObject({ action: 'adopted', runId: 1 });
    expect(adopted).toEqual([[1, adoptMe.id]]);
    expect(r['bt-kept']).toMatchObject({ action: 'kept', runId: 2 });
    expect(r['bt-stopped-live']).toMatchObject({ action: 'failed-run', runId: 3 });
    expect(r['bt-vanished']).toMatchObject({ action: 'failed-run', runId: 4 });
    expect(failed).toEqual([
      [3, 'workspace bt-stopped-live is stopped without a completion callback'],
      [4, 'workspace bt-vanished vanished without a completion callback'],
    ]);
    expect(r['bt-orphan-stopped']).toMatchObject({ action: 'deleted' });
    expect(r['bt-orphan-failed']).toMatchObject({ action: 'deleted' });
    expect(r['bt-orphan-old']).toMatchObject({ action: 'deleted' });
    expect(r['bt-orphan-young']).toMatchObject({ action: 'kept' });
    expect(r['bt-deleting']).toMatchObject({ action: 'ignored' });
    expect(r['bt-queued-failed']).toMatchObject({ action: 'kept', runId: 5 });
    expect(Object.keys(r).sort()).toEqual(
      [
        'bt-adopt',
        'bt-kept',
        'bt-stopped-live',
        'bt-vanished',
        'bt-orphan-stopped',
        'bt-orphan-failed',
        'bt-orphan-old',
        'bt-orphan-young',
        'bt-deleting',
        'bt-queued-failed',
      ].sort(),
    );
    expect(results.every((x) => !('error' in x))).toBe(true);

    await coder.settle();
    for (const name of ['bt-orphan-stopped', 'bt-orphan-failed', 'bt-orphan-old']) {
      expect(coder.workspace(name)?.deleted).toBe(true);
    }
    for (const [name, owner] of [['my-dev-box'], ['bt-alices', 'alice'], ['bt-other-template']] as const) {
      expect(coder.workspace(name, owner)).toMatchObject({ deleted: false, transitions: ['start', 'stop'] });
    }
    expect(coder.workspace('bt-kept')?.transitions).toEqual(['start']);
  });

  it('reports a failing step on its item and carries on with the rest', async () => {
    coder.seedWorkspace({ name: 'bt-a', status: 'stopped' });
    coder.seedWorkspace({ name: 'bt-b', status: 'stopped' });
    const { runs, failed } = fakeRuns(
      [
        { id: 1, status: 'running', workspaceName: 'bt-a' },
        { id: 2, status: 'running', workspaceName: 'bt-b' },
      ],
      { failRunError: 1 },
    );
    const { results } = await reconcile({ provider, runs });
    expect(byName(results)['bt-a']).toMatchObject({ action: 'failed-run', error: 'database is locked' });
    expect(byName(results)['bt-b']).toMatchObject({ action: 'failed-run' });
    expect(failed.map(([id]) => id)).toEqual([2]);
  });

  it('reports a Coder failure while deleting on that item', async () => {
    coder.seedWorkspace({ name: 'bt-a', status: 'stopped' });
    const logged: string[] = [];
    const { runs } = fakeRuns([]);
    coder.faults.failNext(10, { status: 503, match: (r) => r.path.endsWith('/builds') });
    const { results } = await reconcile({
      provider,
      runs,
      logger: { info: (_o, msg) => logged.push(msg), warn: (_o, msg) => logged.push(msg) },
    });
    expect(results).toEqual([expect.objectContaining({ name: 'bt-a', action: 'deleted', error: expect.stringMatching(/HTTP 503/) })]);
    expect(logged).toEqual(['reconcile: deleted failed for workspace bt-a']);
  });

  it('is idempotent: a second pass finds nothing left to do', async () => {
    coder.seedWorkspace({ name: 'bt-orphan', status: 'stopped' });
    coder.seedWorkspace({ name: 'bt-live' });
    const { runs } = fakeRuns([{ id: 1, status: 'running', workspaceName: 'bt-live' }]);
    await reconcile({ provider, runs });
    await coder.settle();
    const { results } = await reconcile({ provider, runs });
    expect(results).toEqual([expect.objectContaining({ name: 'bt-live', action: 'kept' })]);
  });
});
