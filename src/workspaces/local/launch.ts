import type { ChildProcess, StdioOptions } from 'node:child_process';
import { findCommand } from '../../runner-contract/index.js';
import type { RunDirs } from './layout.js';
import type { LocalContext } from './options.js';
import { isProcessAlive, readProcStat, sandboxRunner } from './runner-process.js';
import { sandboxArguments } from './sandbox.js';

// Starting a process as a run is started: in its bubblewrap sandbox (or not), detached, at a
// lower priority, as the run's user; and finding the sandbox's init and runner afterwards.

/** Descriptor number where bwrap tells its init's pid (`--info-fd`). */
export const INFO_FD = 4;

export const bwrapPath = (ctx: LocalContext): string | null =>
  ctx.sandbox.kind === 'bwrap' ? findCommand(ctx.sandbox.bwrap ?? 'bwrap', process.env.PATH) : null;

/** `nice -n N [ionice -c 2 -n 7]` (nothing at 0 or below): each execs the next, so the runner keeps the pid spawned. */
export function priorityPrefix(nice: number): string[] {
  if (nice <= 0) return [];
  const niceBin = findCommand('nice', process.env.PATH);
  const ioniceBin = findCommand('ionice', process.env.PATH);
  return [...(niceBin ? [niceBin, '-n', String(nice)] : []), ...(ioniceBin ? [ioniceBin, '-c', '2', '-n', '7'] : [])];
}

const priority = (ctx: LocalContext): string[] => priorityPrefix(ctx.options.runnerNice ?? 10);

/**
 * Starts `command` as a run would be started: in its sandbox (or not), detached, as its user.
 * `readOnly` adds host paths this run (only) may read: a declared local repository.
 */
export function startRun(
  ctx: LocalContext,
  command: readonly string[],
  dirs: RunDirs,
  env: Record<string, string>,
  stdio: StdioOptions,
  readOnly: readonly string[] = [],
): ChildProcess {
  const { sandbox, options } = ctx;
  if (sandbox.kind === 'none') {
    // A runner that cannot be started must fail its spawn, as without the prefix, not exit 127 under nice.
    const startable = findCommand(command[0]!, env.PATH ?? process.env.PATH, dirs.workDir) !== null;
    const [file, ...args] = [...(startable ? priority(ctx) : []), ...command] as [string, ...string[]];
    return ctx.spawn(file, args, { cwd: dirs.workDir, env, detached: true, stdio });
  }
  const bwrap = bwrapPath(ctx);
  if (bwrap === null) throw new Error(missingBwrap(sandbox.bwrap ?? 'bwrap'));
  const args = sandboxArguments({
    workDir: dirs.workDir,
    homeDir: dirs.homeDir,
    readOnly: [...(sandbox.readOnlyPaths ?? []), ...readOnly],
    hidden: [options.dataDir, ...(sandbox.hiddenPaths ?? [])],
    egressDir: dirs.egressDir,
    insideUser: ctx.runUids ? { uid: 65534, gid: 65534 } : undefined,
  });
  const [file, ...prefix] = [...priority(ctx), bwrap] as unknown as [string, ...string[]];
  return ctx.spawn(file, [...prefix, ...args, '--info-fd', String(INFO_FD), '--', ...command], {
    cwd: dirs.workDir,
    env,
    detached: true,
    stdio,
    ...(dirs.user ? { uid: dirs.user.uid, gid: dirs.user.gid } : {}),
  });
}

/**
 * The runner of a sandbox whose init is `init`, once the init has forked it; `{ pid: 0 }` when the
 * init is gone first (the runner has come and gone), or it does not appear within 10 s.
 */
export async function findSandboxRunner(init: number): Promise<{ pid: number; startTicks: number | null }> {
  const initTicks = readProcStat(init)?.startTicks ?? null;
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline && isProcessAlive(init, initTicks)) {
    const runner = sandboxRunner(init);
    if (runner) return runner;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  return { pid: 0, startTicks: null };
}

/** The host pid of the sandbox's init, from `--info-fd`; null when bwrap failed before it. */
export async function readSandboxInit(child: ChildProcess): Promise<number | null> {
  const info = child.stdio[INFO_FD];
  if (!info) return null;
  let text = '';
  (info as NodeJS.ReadableStream).setEncoding('utf8');
  for await (const chunk of info as AsyncIterable<string>) text += chunk;
  try {
    const pid = (JSON.parse(text) as { 'child-pid'?: unknown })['child-pid'];
    return typeof pid === 'number' && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

export function missingBwrap(command: string): string {
  return (
    `bubblewrap ("${command}") is not installed or not on baton's PATH (${process.env.PATH ?? 'unset'}), so runs cannot be sandboxed: ` +
    'install the bubblewrap package (see docs/troubleshooting.md#sandbox-setup), or set local.sandbox: none in baton.yaml to run them without isolation (not recommended)'
  );
}
