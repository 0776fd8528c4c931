import fs from 'node:fs';
import path from 'node:path';
import { STOP_MARKER, WORK } from './layout.js';
import type { LocalContext } from './options.js';
import { CLAIM_VARIABLE, WORKDIR_VARIABLE } from './runner-env.js';
import { isRunAlive, isRunnerAlive, processesWithEnv, signalRunner, type RunnerRecord } from './runner-process.js';

// Ending a run's processes: its runner first (SIGTERM, so it still reports), then whatever is left.

/**
 * Ends what is left of a run that no recorded pid leads to. Without a sandbox, the agent and
 * what it started live in groups of their own and outlive a runner that dies: they are found by
 * the run's BATON_WORKDIR in their environment (in a sandbox, the init's death ends them). And a
 * start whose baton was killed before it recorded the pid left a runner nobody knows: it carries
 * its start's claim in its environment. SIGKILL takes effect only when a process is next
 * scheduled, and one may fork between a scan and its kill: scans repeat until none is found, so
 * the caller may remove the workspace afterwards. False when some were still there at `ms`.
 */
export async function killLeftovers(ctx: LocalContext, dir: string, record: RunnerRecord | null, ms = 5_000): Promise<boolean> {
  const markers = [
    ...(ctx.sandbox.kind === 'none' ? [`${WORKDIR_VARIABLE}=${path.join(dir, WORK)}`] : []),
    ...(record?.claim ? [`${CLAIM_VARIABLE}=${record.claim}`] : []),
  ];
  const deadline = Date.now() + ms;
  for (;;) {
    const left = markers.flatMap((marker) => processesWithEnv(marker));
    if (left.length === 0) return true;
    if (Date.now() > deadline) return false;
    for (const pid of left) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Gone meanwhile.
      }
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Ends every process of the run at once. */
function kill(ctx: LocalContext, dir: string, record: RunnerRecord): void {
  signalRunner(record, 'SIGKILL');
  // Whoever removes the workspace waits for these (removeWorkspace); this only starts it.
  void killLeftovers(ctx, dir, record);
}

/**
 * SIGTERM to a live runner (it stops its agent and still reports), and SIGKILL after the grace
 * period (through `later`) if anything of the run is left. Without a runner nobody is left to
 * report: what remains of the run is killed now. False when nothing of the run was alive.
 */
export function terminate(ctx: LocalContext, dir: string, record: RunnerRecord, later: (ms: number, fn: () => void) => void): boolean {
  if (record.pid === null || !isRunAlive(record)) return false;
  fs.writeFileSync(path.join(dir, STOP_MARKER), `${new Date(ctx.now()).toISOString()}\n`);
  if (!isRunnerAlive(record)) {
    kill(ctx, dir, record);
    return true;
  }
  signalRunner(record, 'SIGTERM');
  later(ctx.graceMs, () => {
    if (isRunAlive(record)) kill(ctx, dir, record);
  });
  return true;
}

/** Whether the run's processes are gone within `ms`. */
export async function waitForExit(record: RunnerRecord, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (isRunAlive(record) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  return !isRunAlive(record);
}
