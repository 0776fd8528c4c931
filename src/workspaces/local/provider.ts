import fs from 'node:fs';
import path from 'node:path';
import type { Workspace, WorkspaceProvider, WorkspaceSpec, WorkspaceStatus } from '../types.js';
import { createHealthCheck } from './health.js';
import { checkName, DELETE_MARKER, isValidName, RECORD, STOP_MARKER } from './layout.js';
import { createLocalContext, type LocalProviderOptions } from './options.js';
import { isRunAlive, isRunnerAlive, readRunnerRecord, type RunnerRecord } from './runner-process.js';
import {
  confirmSpawned,
  launchRunner,
  openGate,
  prepareRunDirs,
  recordExit,
  recordRunner,
  tokenHashOf,
  writeClaim,
} from './runner-start.js';
import { killLeftovers, terminate, waitForExit } from './termination.js';

/**
 * Workspaces as processes on this machine: `<dataDir>/workspaces/<name>/` holds `runner.json`
 * (pids and process start time, no secrets), `runner.log`, and the two directories the run sees:
 * `work/` (its workspace) and `home/`. Each runner and its agent live in a bubblewrap sandbox of
 * their own (see sandbox.ts) unless the operator turned it off. Runners outlive a baton restart;
 * the next baton finds them again through `runner.json`.
 */
export function createLocalProvider(options: LocalProviderOptions): WorkspaceProvider {
  if (options.command.length === 0) throw new Error('createLocalProvider: command must not be empty');
  const ctx = createLocalContext(options);
  const { root, now, gates } = ctx;
  const checks = createHealthCheck(ctx);
  const creating = new Map<string, Promise<Workspace>>();
  const deleting = new Map<string, Promise<void>>();
  const timers = new Set<NodeJS.Timeout>();

  const dirOf = (name: string) => path.join(root, name);

  const read = (name: string): Workspace | null => {
    const dir = dirOf(name);
    let stat: fs.Stats;
    try {
      stat = fs.statSync(dir);
    } catch {
      return null;
    }
    if (!stat.isDirectory()) return null;
    const record = readRunnerRecord(path.join(dir, RECORD));
    const createdAt = record?.startedAt ?? Math.floor(stat.birthtimeMs || stat.mtimeMs);
    let status: WorkspaceStatus;
    if (fs.existsSync(path.join(dir, DELETE_MARKER))) status = 'deleting';
    else if (!record) status = creating.has(name) ? 'pending' : 'failed';
    else if (record.pid === null) status = creating.has(name) ? 'starting' : 'failed';
    else if (isRunnerAlive(record)) status = fs.existsSync(path.join(dir, STOP_MARKER)) ? 'stopping' : 'running';
    else status = 'stopped';
    return { id: name, name, status, createdAt };
  };

  const later = (ms: number, fn: () => void) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      fn();
    }, ms);
    timer.unref();
    timers.add(timer);
  };

  const start = async (spec: WorkspaceSpec): Promise<Workspace> => {
    // A run is never started where the check says it cannot work: the reason is the run's error.
    const last = checks.last();
    const ready = last?.ok ? last : await checks.refresh();
    if (!ready.ok) throw new Error(ready.reason ?? 'local provider: not ready', { cause: ready.cause });

    const dir = dirOf(spec.name);
    if (fs.existsSync(path.join(dir, DELETE_MARKER))) {
      // The old workspace of this name is going away; the new one must not inherit its files.
      await (deleting.get(spec.name) ?? removeWorkspace(spec.name));
    }
    const dirs = prepareRunDirs(ctx, spec, dir);
    let claim: RunnerRecord;
    try {
      claim = writeClaim(ctx, spec, dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') {
        const existing = read(spec.name);
        if (existing) return existing;
      }
      throw err;
    }
    const network = gates ? await openGate(gates, spec, dir, dirs.user) : {};
    const child = launchRunner(ctx, spec, dir, dirs, claim, network);
    await confirmSpawned(ctx, child, dir);
    recordExit(ctx, child, dir, () => deleting.has(spec.name));
    // The runner must be able to outlive this process (a baton restart does not kill runs).
    child.unref();
    await recordRunner(ctx, child, dir, claim);
    return { id: spec.name, name: spec.name, status: 'running', createdAt: claim.startedAt };
  };

  /**
   * Whether the workspace of `spec.name` was started for this run: its runner holds the callback
   * token of this attempt or of an earlier one. One started for another run that had the same
   * name (a database restored from a backup gives its numbers out again) is not: adopting it
   * would leave this run waiting on a runner whose callbacks it refuses, beside its own work.
   */
  const belongsToRun = (spec: WorkspaceSpec): boolean => {
    if (spec.adoptableTokenHashes === undefined) return true;
    const record = readRunnerRecord(path.join(dirOf(spec.name), RECORD));
    if (!record || record.tokenHash === null) return true;
    return record.tokenHash === tokenHashOf(spec.callbackToken) || spec.adoptableTokenHashes.includes(record.tokenHash);
  };

  const removeWorkspace = async (name: string): Promise<void> => {
    const dir = dirOf(name);
    const record = readRunnerRecord(path.join(dir, RECORD));
    if (record && record.pid !== null && isRunAlive(record)) {
      terminate(ctx, dir, record, later);
      if (!(await waitForExit(record, ctx.graceMs + 5_000))) {
        throw new Error(`runner ${record.pid} of workspace ${name} did not exit after SIGKILL`);
      }
    }
    if (!(await killLeftovers(ctx, dir, record))) throw new Error(`processes of workspace ${name} did not exit after SIGKILL`);
    await gates?.close(dir);
    // Retries ride out a file appearing while the tree is removed (ENOTEMPTY), e.g. a runner's
    // last write racing its own termination.
    await fs.promises.rm(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 });
  };

  // Runners outlive a baton restart; their gates, in this process, do not: open them again.
  const reopening =
    gates?.reopen(root, (dir) => {
      const record = readRunnerRecord(path.join(dir, RECORD));
      return record !== null && record.pid !== null && isRunnerAlive(record) && !fs.existsSync(path.join(dir, DELETE_MARKER));
    }) ?? Promise.resolve();

  return {
    name: 'local',
    async create(spec) {
      checkName(spec.name);
      const inFlight = creating.get(spec.name);
      if (inFlight) return inFlight;
      const existing = read(spec.name);
      if (existing && existing.status !== 'deleting' && existing.status !== 'failed') {
        if (belongsToRun(spec)) return existing;
        // Another run's (its own run is unknown to this database): ended and removed, never
        // adopted, so only this run's own runner works on the run.
        const record = readRunnerRecord(path.join(dirOf(spec.name), RECORD));
        ctx.onError(
          `local workspace ${spec.name} was started for another run ${record?.runId ?? '?'} (its callback token is not one of run ${spec.runId}'s, as after a database restore); it is removed and made again`,
          new Error('workspace of another run'),
        );
        await removeWorkspace(spec.name);
      }
      if (existing?.status === 'failed') {
        // A start that never recorded its runner (its baton died meanwhile) may have left one running.
        await killLeftovers(ctx, dirOf(spec.name), readRunnerRecord(path.join(dirOf(spec.name), RECORD)));
        await fs.promises.rm(dirOf(spec.name), { recursive: true, force: true });
      }
      const promise = start(spec).finally(() => creating.delete(spec.name));
      creating.set(spec.name, promise);
      return promise;
    },
    async get(name) {
      return isValidName(name) ? read(name) : null;
    },
    async list() {
      let entries: fs.Dirent[];
      try {
        entries = fs.readdirSync(root, { withFileTypes: true });
      } catch {
        return [];
      }
      return entries.filter((e) => e.isDirectory() && isValidName(e.name)).flatMap((e) => read(e.name) ?? []);
    },
    async stop(name) {
      if (!isValidName(name)) return;
      const dir = dirOf(name);
      const record = readRunnerRecord(path.join(dir, RECORD));
      if (record) terminate(ctx, dir, record, later);
    },
    async delete(name) {
      if (!isValidName(name) || deleting.has(name) || !fs.existsSync(dirOf(name))) return;
      fs.writeFileSync(path.join(dirOf(name), DELETE_MARKER), `${new Date(now()).toISOString()}\n`);
      const promise = removeWorkspace(name)
        .catch((err) => ctx.onError(`deleting local workspace ${name} failed; it stays marked for deletion`, err))
        .finally(() => deleting.delete(name));
      deleting.set(name, promise);
    },
    health() {
      return checks.report();
    },
    async close() {
      await Promise.all([...deleting.values(), checks.inFlight()]);
      // Live runs lose their way out until the next baton opens their gates again (reopenGates).
      await reopening;
      await gates?.closeAll();
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
    },
  };
}
