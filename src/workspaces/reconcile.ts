import { errorMessage } from '../background/index.js';
import type { Workspace, WorkspaceProvider } from './types.js';

/** What reconcile needs from the run engine; kept this small so it can be wired to any store. */
export interface ReconcileRuns {
  /** Runs that are queued, provisioning or running, with the workspace name recorded on them. */
  listLive(): Promise<{ id: number; status: string; workspaceName: string | null }[]>;
  /** A provisioning run whose workspace is up: record it and move the run to running. */
  adopt(runId: number, workspaceId: string): Promise<void>;
  /** Ends a running run with this reason and frees its slot. */
  failRun(runId: number, reason: string): Promise<void>;
}

export type ReconcileAction = 'adopted' | 'failed-run' | 'deleted' | 'kept' | 'ignored';

export interface ReconcileItem {
  /** Workspace name. */
  name: string;
  /** What reconcile did, or tried to do when `error` is set. */
  action: ReconcileAction;
  runId?: number;
  /** Workspace status as reconcile saw it (absent when it had vanished). */
  status?: string;
  reason?: string;
  error?: string;
}

export interface ReconcileOptions {
  provider: Pick<WorkspaceProvider, 'list' | 'get' | 'delete'>;
  runs: ReconcileRuns;
  /**
   * A running workspace no live run claims is deleted once older than this; younger ones may be
   * a teardown in progress or a create whose run row is being written. @default 1_800_000 (30 min)
   */
  orphanGraceMs?: number;
  now?: () => number;
  /** pino-compatible; each result is logged at info (warn when it has an error). */
  logger?: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };
}

const ACTIVE = new Set(['pending', 'starting', 'running']);
const ENDED = new Set(['stopped', 'failed', 'canceled']);

/**
 * Brings workspaces and runs back into agreement, at start and on every sweep. Works only on what
 * `provider.list()` returns, which is baton's workspaces (name pattern, template, owner): anybody
 * else's are never seen, so never touched. Returns what it did per workspace and never throws
 * halfway; only a failure to read the two lists at the start throws.
 *
 * - live run + its workspace running: a provisioning run is adopted, a running one kept;
 * - running run + its workspace stopped/failed/canceled, or gone: the run fails with that reason
 *   (the teardown that follows removes the workspace);
 * - no live run + workspace stopped/failed/canceled: deleted;
 * - no live run + workspace running past `orphanGraceMs`: deleted (a leaked workspace);
 * - workspaces mid-transition (stopping, deleting): ignored until the next sweep.
 */
export async function reconcile(options: ReconcileOptions): Promise<{ results: ReconcileItem[] }> {
  const { provider, runs } = options;
  const now = options.now ?? Date.now;
  const orphanGraceMs = options.orphanGraceMs ?? 30 * 60_000;
  const [live, workspaces] = await Promise.all([runs.listLive(), provider.list()]);

  const runByName = new Map<string, (typeof live)[number]>();
  for (const run of live) if (run.workspaceName) runByName.set(run.workspaceName, run);
  const results: ReconcileItem[] = [];
  const seen = new Set<string>();

  const attempt = async (item: ReconcileItem, work: () => Promise<void>) => {
    try {
      await work();
    } catch (error) {
      item.error = errorMessage(error);
    }
    results.push(item);
  };

  for (const ws of workspaces) {
    seen.add(ws.name);
    const run = runByName.get(ws.name);
    const base = { name: ws.name, status: ws.status, ...(run ? { runId: run.id } : {}) };
    const item: ReconcileItem = { ...base, ...decide(ws, run, now(), orphanGraceMs) };
    await attempt(item, async () => {
      if (item.action === 'adopted' && run) await runs.adopt(run.id, ws.id);
      else if (item.action === 'failed-run' && run) await runs.failRun(run.id, item.reason ?? 'workspace ended');
      else if (item.action === 'deleted') await provider.delete(ws.name);
    });
  }

  for (const run of live) {
    if (run.status !== 'running' || !run.workspaceName || seen.has(run.workspaceName)) continue;
    const reason = `workspace ${run.workspaceName} vanished without a completion callback`;
    const item: ReconcileItem = { name: run.workspaceName, runId: run.id, action: 'failed-run', reason };
    await attempt(item, async () => {
      // The list may have been paged while workspaces changed: confirm before failing the run.
      const current = await provider.get(run.workspaceName as string);
      if (current) {
        item.action = 'kept';
        item.status = current.status;
        delete item.reason;
        return;
      }
      await runs.failRun(run.id, reason);
    });
  }

  for (const item of results) {
    const { name, ...rest } = item;
    if (item.error) options.logger?.warn({ workspace: name, ...rest }, `reconcile: ${item.action} failed for workspace ${name}`);
    else options.logger?.info({ workspace: name, ...rest }, `reconcile: ${item.action} workspace ${name}`);
  }
  return { results };
}

/** What reconcile does with one workspace, given the live run that names it (if any). Pure. */
export function decide(
  ws: Pick<Workspace, 'name' | 'status' | 'createdAt'>,
  run: { id: number; status: string } | undefined,
  now: number,
  orphanGraceMs: number,
): Pick<ReconcileItem, 'action' | 'reason'> {
  if (run) {
    if (ACTIVE.has(ws.status)) {
      return run.status === 'provisioning' && ws.status === 'running' ? { action: 'adopted' } : { action: 'kept' };
    }
    if (ENDED.has(ws.status)) {
      // A provisioning run's own create handles a failed workspace (delete and recreate); a
      // queued run will create afresh. Only a running run was waiting on this workspace.
      if (run.status === 'running') {
        return { action: 'failed-run', reason: `workspace ${ws.name} is ${ws.status} without a completion callback` };
      }
      return { action: 'kept' };
    }
    return { action: 'ignored', reason: `workspace is ${ws.status}` };
  }
  if (ENDED.has(ws.status)) return { action: 'deleted', reason: `${ws.status} and no live run owns it` };
  if (ACTIVE.has(ws.status)) {
    return now - ws.createdAt >= orphanGraceMs
      ? { action: 'deleted', reason: `${ws.status} for over ${orphanGraceMs} ms and no live run owns it` }
      : { action: 'kept', reason: 'no live run owns it yet; within the grace period' };
  }
  return { action: 'ignored', reason: `workspace is ${ws.status}` };
}
