import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { bwrapPath, INFO_FD, missingBwrap, startRun } from './launch.js';
import { prepareDirs, writing } from './layout.js';
import type { LocalContext } from './options.js';
import { pickRunUser } from './run-users.js';
import { baseEnv } from './runner-env.js';

// Whether runs can start here: the operator's check command (`baton agent --check`) run like a
// runner (same sandbox, same env, no secrets) in a throw-away workspace.

export interface Health {
  ok: boolean;
  reason?: string;
  /** What made the check fail, kept as the cause of the runs' errors: a full disk is transient. */
  cause?: unknown;
  at: number;
}

/** Longest a readiness check may run before it counts as failed. */
const CHECK_TIMEOUT_MS = 60_000;
/** How long a check result is trusted: a failure is retried soon, a success re-checked now and then. */
const CHECK_RETRY_MS = 10_000;
const CHECK_REFRESH_MS = 5 * 60_000;

export interface HealthCheck {
  /** The last result, null before the first check has finished. */
  last(): Health | null;
  /** Checks now, or joins the check in flight. */
  refresh(): Promise<Health>;
  /** The last result for `/ready`, checking again in the background when it is stale. */
  report(): { ok: boolean; reason?: string };
  /** The check in flight, if any (for close). */
  inFlight(): Promise<Health> | null;
}

export function createHealthCheck(ctx: LocalContext): HealthCheck {
  let health: Health | null = null;
  let checking: Promise<Health> | null = null;
  const refresh = (): Promise<Health> => {
    checking ??= runCheck(ctx)
      .then((result) => {
        health = result;
        return result;
      })
      .finally(() => {
        checking = null;
      });
    return checking;
  };
  return {
    last: () => health,
    refresh,
    report() {
      // Checked in the background: /ready answers at once with the last result, and a failure
      // is checked again soon, so fixing it turns /ready green without a restart.
      if (health === null || ctx.now() - health.at > (health.ok ? CHECK_REFRESH_MS : CHECK_RETRY_MS)) void refresh();
      if (health === null) return { ok: false, reason: 'local provider: checking the sandbox and the agent command' };
      return health.ok ? { ok: true } : { ok: false, reason: health.reason };
    },
    inFlight: () => checking,
  };
}

/** Runs the readiness check in a throw-away workspace, exactly as a runner would run. */
async function runCheck(ctx: LocalContext): Promise<Health> {
  const { sandbox, gates, runAs } = ctx;
  const dir = path.join(path.resolve(ctx.options.dataDir), 'sandbox-checks', randomUUID());
  const at = ctx.now();
  try {
    if (sandbox.kind === 'bwrap' && bwrapPath(ctx) === null)
      return { ok: false, reason: `local provider: ${missingBwrap(sandbox.bwrap ?? 'bwrap')}`, at };
    // As a run would be: with a uid of the range when runs get one each.
    const user = ctx.runUids ? pickRunUser(ctx.root, ctx.runUids, 0, ctx.reservedUids) : runAs;
    const dirs = writing('of the sandbox check', () => prepareDirs(ctx, path.dirname(dir), dir, user));
    // The check proves the network too: from inside, baton's port and its database must not connect.
    const network = gates ? { ...(await gates.open(dir, undefined, dirs.user)), BATON_CHECK_UNREACHABLE: gates.unreachable } : {};
    const child = startRun(ctx, ctx.options.check ?? ['true'], dirs, { ...baseEnv(ctx, dirs.workDir), ...network }, [
      'ignore',
      'pipe',
      'pipe',
      'ignore',
      'pipe',
    ]);
    const { exit, output } = await waitForCheck(child);
    if (exit.code === 0) return { ok: true, at };
    const last =
      output
        .split('\n')
        .filter((l) => l.trim() !== '')
        .at(-1)
        ?.trim() ??
      exit.error?.message ??
      `exit code ${exit.code}`;
    return { ok: false, reason: `local provider: ${describeCheckFailure(last, sandbox.kind, runAs)}`, at };
  } catch (err) {
    return { ok: false, reason: `local provider: ${describeCheckFailure((err as Error).message, sandbox.kind, runAs)}`, cause: err, at };
  } finally {
    await gates?.close(dir);
    await fs.promises.rm(dir, { recursive: true, force: true }).catch(() => {});
  }
}

/** The check's output and how it ended: its exit code, or the error (no start, too slow) instead. */
async function waitForCheck(child: ChildProcess): Promise<{ exit: { code: number | null; error?: Error }; output: string }> {
  let output = '';
  for (const stream of [child.stdout, child.stderr]) {
    stream?.setEncoding('utf8');
    stream?.on('data', (chunk: string) => (output += chunk));
  }
  // bwrap's --info-fd answer is not needed here, but must be drained for 'close' to come.
  child.stdio[INFO_FD]?.on('data', () => {});
  const exit = await new Promise<{ code: number | null; error?: Error }>((resolve) => {
    const timer = setTimeout(() => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // Gone meanwhile.
      }
      resolve({ code: null, error: new Error(`the check did not finish within ${CHECK_TIMEOUT_MS / 1000} s`) });
    }, CHECK_TIMEOUT_MS);
    child.once('error', (error) => {
      clearTimeout(timer);
      resolve({ code: null, error });
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code });
    });
  });
  return { exit, output };
}

function describeCheckFailure(line: string, kind: 'bwrap' | 'none', runAs: { uid: number } | undefined): string {
  if (kind === 'bwrap' && line.startsWith('bwrap:')) {
    const hint =
      runAs && /Permission denied/.test(line)
        ? ` (runs are uid ${runAs.uid} because baton runs as root: every directory above the workspaces, BATON_DATA_DIR included, must be traversable by it, e.g. chmod o+x)`
        : '';
    return `the bubblewrap sandbox cannot be set up: ${line}${hint}; fix it (see docs/troubleshooting.md#sandbox-setup), or set local.sandbox: none in baton.yaml to run without isolation (not recommended)`;
  }
  return line;
}
