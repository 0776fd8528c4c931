import { spawn as nodeSpawn, spawnSync } from 'node:child_process';
import { findCommand } from '../runner-contract/index.js';
import type { SpawnFunction } from './process-group.js';

/**
 * Starts every process of the run (git, the install and build commands, the agent) in a nested
 * bubblewrap sandbox: a PID namespace of its own with a fresh /proc. The runner holds the
 * callback token in memory; a process that cannot see the runner cannot read its memory
 * (`/proc/<pid>/mem`), its environment or its descriptors, nor signal it. The file system stays
 * the runner's own (already the sandbox the local provider built), the network stays on.
 *
 * When the nested process group is stopped, SIGTERM reaches the command itself (bwrap does not
 * start a new session) while bwrap's own monitor dies of it; SIGKILL of the group then takes the
 * namespace's init, and with it everything the command left behind, even in other groups.
 */
export function nestedSandboxSpawn(options: { bwrap?: string; spawn?: SpawnFunction } = {}): SpawnFunction {
  const spawn = options.spawn ?? (nodeSpawn as SpawnFunction);
  return (command, args, spawnOptions) => {
    const cwd = String(spawnOptions.cwd ?? process.cwd());
    const env = spawnOptions.env ?? process.env;
    // Looked up here, as the sandbox will see it, so a missing command fails like a plain spawn
    // (ENOENT) instead of as bwrap's exit code 1.
    const resolved = findCommand(command, env.PATH, cwd);
    if (resolved === null) {
      throw Object.assign(new Error(`spawn ${command} ENOENT`), { code: 'ENOENT', errno: -2, syscall: `spawn ${command}`, path: command });
    }
    const bwrap = findCommand(options.bwrap ?? 'bwrap', env.PATH, cwd) ?? options.bwrap ?? 'bwrap';
    return spawn(bwrap, [...NESTED_SANDBOX_ARGS, '--chdir', cwd, '--', resolved, ...args], spawnOptions);
  };
}

/** `--bind / /` keeps the runner's view (its sandbox); `--proc` mounts one for the new PID namespace. */
export const NESTED_SANDBOX_ARGS: readonly string[] = [
  '--unshare-all',
  '--share-net',
  '--bind',
  '/',
  '/',
  '--proc',
  '/proc',
  '--dev',
  '/dev',
];

/**
 * Whether a nested sandbox can start here (`BATON_SANDBOX=auto`, the Coder templates' default):
 * null when it can, else bubblewrap's reason (not installed, no user namespaces in this container).
 */
export function nestedSandboxProblem(bwrap = 'bwrap'): string | null {
  const found = findCommand(bwrap, process.env.PATH);
  if (found === null) return `bubblewrap (${bwrap}) is not on the PATH`;
  const probe = spawnSync(found, [...NESTED_SANDBOX_ARGS, '--', 'true'], { encoding: 'utf8', timeout: 10_000 });
  if (probe.status === 0) return null;
  return (probe.stderr ?? '').trim().split('\n').at(-1) || probe.error?.message || `exit code ${probe.status}`;
}
