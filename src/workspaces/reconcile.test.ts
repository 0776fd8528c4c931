import { describe, expect, it } from 'vitest';
import { decide } from './reconcile.js';
import type { WorkspaceStatus } from './types.js';

const NOW = 1_700_000_000_000;
const GRACE = 30 * 60_000;
const ws = (status: WorkspaceStatus, ageMs = 0) => ({ name: 'develop-acme-app-7-r1', status, createdAt: NOW - ageMs });

describe('reconcile decisions', () => {
  it('adopts the running workspace of a provisioning run and keeps a running run’s', () => {
    expect(decide(ws('running'), { id: 1, status: 'provisioning' }, NOW, GRACE)).toEqual({ action: 'adopted' });
    expect(decide(ws('running'), { id: 1, status: 'running' }, NOW, GRACE)).toEqual({ action: 'kept' });
    expect(decide(ws('starting'), { id: 1, status: 'provisioning' }, NOW, GRACE)).toEqual({ action: 'kept' });
  });

  it('fails a running run whose workspace ended without calling back', () => {
    for (const status of ['stopped', 'failed', 'canceled'] as const) {
      expect(decide(ws(status), { id: 1, status: 'running' }, NOW, GRACE)).toEqual({
        action: 'failed-run',
        reason: `workspace develop-acme-app-7-r1 is ${status} without a completion callback`,
      });
    }
  });

  it('leaves an ended workspace of a provisioning or queued run to its own create', () => {
    expect(decide(ws('failed'), { id: 1, status: 'provisioning' }, NOW, GRACE)).toEqual({ action: 'kept' });
    expect(decide(ws('stopped'), { id: 1, status: 'queued' }, NOW, GRACE)).toEqual({ action: 'kept' });
  });

  it('deletes an ended workspace no live run owns, and a running one only past the grace period', () => {
    expect(decide(ws('stopped'), undefined, NOW, GRACE)).toMatchObject({ action: 'deleted' });
    expect(decide(ws('running', GRACE), undefined, NOW, GRACE)).toMatchObject({ action: 'deleted' });
    expect(decide(ws('running', GRACE - 1), undefined, NOW, GRACE)).toMatchObject({ action: 'kept' });
  });

  it('ignores workspaces in the middle of a transition until the next sweep', () => {
    for (const status of ['stopping', 'deleting'] as const) {
      expect(decide(ws(status), undefined, NOW, GRACE)).toMatchObject({ action: 'ignored' });
      expect(decide(ws(status), { id: 1, status: 'running' }, NOW, GRACE)).toMatchObject({ action: 'ignored' });
    }
  });
});
