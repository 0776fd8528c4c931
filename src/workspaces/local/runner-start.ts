import type { ChildProcess } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { PermanentError } from '../../background/index.js';
import { transientErrorCode, type WorkspaceSpec } from '../types.js';
import type { RunUser } from './credentials.js';
import type { RunGates } from './egress.js';
import { bwrapPath, findSandboxRunner, readSandboxInit, startRun } from './launch.js';
import { EXIT, LOG, RECORD, SECRETS, lastLines, prepareDirs, trustRepository, writing, type RunDirs } from './layout.js';
import type { LocalContext } from './options.js';
import { pickRunUser } from './run-users.js';
import { openSecrets, runEnv, runSecrets } from './runner-env.js';
import { readProcStat, type RunnerRecord } from './runner-process.js';

// The steps of starting a run's runner, in the order the local provider's `start` takes them:
// its directories, the claim on its name, its egress gate, the runner, its exit, its record.

/** The run's directories, owned by the uid it runs as (one of `local.runUids`, reserved meanwhile). */
export function prepareRunDirs(ctx: LocalContext, spec: WorkspaceSpec, dir: string): RunDirs {
  const user = ctx.runUids ? pickRunUser(ctx.root, ctx.runUids, spec.runId, ctx.reservedUids) : ctx.runAs;
  if (ctx.runUids && user) ctx.reservedUids.add(user.uid);
  let dirs: RunDirs;
  try {
    dirs = writing(spec.name, () => prepareDirs(ctx, ctx.root, dir, user));
  } finally {
    if (ctx.runUids && user) ctx.reservedUids.delete(user.uid);
  }
  if (spec.repositoryPath && ctx.sandbox.kind === 'bwrap') trustRepository(dirs.homeDir, spec.repositoryPath, user);
  return dirs;
}

/**
 * Claims the workspace for this start: a record without pids yet, and a claim that marks the
 * runner's environment. 'wx' makes the claim atomic: a second baton creating the same name gets
 * EEXIST and adopts this one.
 */
/** SHA-256 (hex) of a callback token, as the runs store it (runs/callback-tokens.ts `hashCallbackToken`). */
export function tokenHashOf(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

export function writeClaim(ctx: LocalContext, spec: WorkspaceSpec, dir: string): RunnerRecord {
  const claim: RunnerRecord = {
    pid: null,
    pgid: null,
    startedAt: ctx.now(),
    startTicks: null,
    runner: null,
    runId: spec.runId,
    stage: spec.stage,
    claim: randomUUID(),
    tokenHash: tokenHashOf(spec.callbackToken),
  };
  writing(spec.name, () => fs.writeFileSync(path.join(dir, RECORD), JSON.stringify(claim), { flag: 'wx', mode: 0o600 }));
  return claim;
}

/** Opens the run's egress gate and returns its variables; a gate that cannot open ends the start. */
export async function openGate(
  gates: RunGates,
  spec: WorkspaceSpec,
  dir: string,
  user: RunUser | undefined,
): Promise<Record<string, string>> {
  try {
    return await gates.open(dir, spec, user);
  } catch (err) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw new Error(`the egress gate of the run could not be opened: ${(err as Error).message}`, { cause: err });
  }
}

/** Starts the runner with its environment, its secrets on a descriptor and its log; baton keeps none of them open. */
export function launchRunner(
  ctx: LocalContext,
  spec: WorkspaceSpec,
  dir: string,
  dirs: RunDirs,
  claim: RunnerRecord,
  network: Record<string, string>,
): ChildProcess {
  const env = runEnv(ctx, spec, dirs.workDir, network, claim.claim!);
  const secrets = writing(spec.name, () => openSecrets(path.join(dir, SECRETS), runSecrets(ctx, spec)));
  const log = writing(spec.name, () => fs.openSync(path.join(dir, LOG), 'a', 0o600));
  try {
    return startRun(
      ctx,
      ctx.options.command,
      dirs,
      env,
      ['ignore', log, log, secrets, ctx.sandbox.kind === 'bwrap' ? 'pipe' : 'ignore'],
      spec.repositoryPath ? [spec.repositoryPath] : [],
    );
  } catch (err) {
    discard(ctx, dir);
    throw new Error(`the local runner could not be started: ${(err as Error).message}`, { cause: err });
  } finally {
    // The runner holds its own copies now; baton keeps none of the secrets.
    fs.closeSync(log);
    fs.closeSync(secrets);
  }
}

/** Waits for the spawn to succeed or fail; a runner that could not be started ends the start. */
export async function confirmSpawned(ctx: LocalContext, child: ChildProcess, dir: string): Promise<void> {
  const spawnError = await new Promise<Error | null>((resolve) => {
    if (child.pid !== undefined) return resolve(null);
    child.once('error', resolve);
  });
  if (!spawnError && child.pid !== undefined) return;
  discard(ctx, dir);
  const message = `the local runner could not be started: ${spawnError?.message ?? 'no pid'}`;
  // Out of processes or descriptors for a while (EAGAIN, EMFILE): the run waits and retries.
  if (transientErrorCode(spawnError)) throw new Error(message, { cause: spawnError });
  throw new PermanentError(
    `the local runner command ${JSON.stringify(ctx.sandbox.kind === 'bwrap' ? (bwrapPath(ctx) ?? 'bwrap') : ctx.options.command[0])} could not be started: ${spawnError?.message ?? 'no pid'}`,
    { cause: spawnError },
  );
}

/**
 * Writes `exit.json` when the spawned process ends. In a sandbox the child is bwrap's monitor: it
 * exits with the runner's status, or at once when SIGTERM reaches it while the runner is still
 * reporting (the record's pid, the namespace's init, says when the run is really over).
 */
export function recordExit(ctx: LocalContext, child: ChildProcess, dir: string, isDeleting: () => boolean): void {
  child.once('exit', (code, signal) => {
    // A teardown may already be removing the directory: a file written now makes its rm fail.
    if (isDeleting()) return;
    try {
      fs.writeFileSync(path.join(dir, EXIT), JSON.stringify({ code, signal, at: ctx.now() }));
    } catch {
      // The directory may already be deleted.
    }
  });
}

/**
 * Completes the claim with the runner's pids: the spawned process (bwrap's monitor, whose group
 * is the run's), and in a sandbox its init (which ends the run's PID namespace) and the runner.
 */
export async function recordRunner(ctx: LocalContext, child: ChildProcess, dir: string, claim: RunnerRecord): Promise<RunnerRecord> {
  const monitor = child.pid!;
  let pid = monitor;
  if (ctx.sandbox.kind === 'bwrap') {
    const init = await readSandboxInit(child);
    if (init === null) {
      const tail = lastLines(path.join(dir, LOG));
      discard(ctx, dir);
      throw new Error(`the local sandbox could not be set up: ${tail || 'bwrap exited before starting the runner'}`);
    }
    pid = init;
  }
  const record: RunnerRecord = {
    ...claim,
    pid,
    pgid: monitor,
    startTicks: readProcStat(pid)?.startTicks ?? null,
    runner: ctx.sandbox.kind === 'bwrap' ? await findSandboxRunner(pid) : null,
  };
  fs.writeFileSync(path.join(dir, RECORD), JSON.stringify(record), { mode: 0o600 });
  return record;
}

/** Removes a workspace whose start failed, and its gate. */
function discard(ctx: LocalContext, dir: string): void {
  void ctx.gates?.close(dir);
  fs.rmSync(dir, { recursive: true, force: true });
}
