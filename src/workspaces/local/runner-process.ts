import fs from 'node:fs';

/**
 * What a local workspace records about its runner in `runner.json`. No secrets: the runner read
 * its tokens from a descriptor that no longer exists.
 */
export interface RunnerRecord {
  /**
   * The process whose life is the run's: in a sandbox the init of the run's PID namespace (when
   * it ends, the kernel ends every process of the run), else the runner itself. null between
   * claiming the directory and spawning the process.
   */
  pid: number | null;
  /**
   * Process group that SIGTERM goes to: it holds the runner (which stops its agent and still
   * reports) and, in a sandbox, bwrap's monitor. Records from before sandboxes lack it: their
   * runner led its own group.
   */
  pgid: number | null;
  /** Epoch ms when the runner was started. */
  startedAt: number;
  /**
   * Kernel start time of the process (clock ticks since boot, Linux /proc/<pid>/stat field 22).
   * Lets a restarted baton tell our runner from an unrelated process that got the same pid.
   */
  startTicks: number | null;
  /**
   * In a sandbox, the runner itself: the init's first child. It can die while the namespace
   * lives on (an agent or a background process it started keeps the init waiting), and then the
   * run is over although `pid` is alive. null outside a sandbox and in older records: there
   * `pid` is the runner. A pid of 0 means the runner was gone before it could be found.
   */
  runner: { pid: number; startTicks: number | null } | null;
  runId: number;
  stage: string;
  /**
   * This start's own identity, written before anything is spawned and given to the runner as
   * `BATON_WORKSPACE_CLAIM`: the processes of a start whose baton died before it recorded their
   * pid are found by it (and ended), never left running beside the next attempt. null in older
   * records.
   */
  claim: string | null;
  /**
   * SHA-256 (hex) of the callback token the runner was started with: who the workspace belongs
   * to. A run adopts the workspace of its name only when this is one of its own tokens' (the
   * current attempt's or an earlier one's): a database restored from a backup numbers runs again,
   * and its run 42 must not take over the live workspace of the run 42 it forgot. null in older
   * records (adopted by name, as before).
   */
  tokenHash: string | null;
}

export function readRunnerRecord(file: string): RunnerRecord | null {
  try {
    const parsed = JSON.parse(fs.readFileSync(file, 'utf8')) as Partial<RunnerRecord>;
    if (typeof parsed.startedAt !== 'number') return null;
    const pid = typeof parsed.pid === 'number' ? parsed.pid : null;
    return {
      pid,
      pgid: typeof parsed.pgid === 'number' ? parsed.pgid : pid,
      startedAt: parsed.startedAt,
      startTicks: typeof parsed.startTicks === 'number' ? parsed.startTicks : null,
      runner:
        typeof parsed.runner?.pid === 'number'
          ? { pid: parsed.runner.pid, startTicks: typeof parsed.runner.startTicks === 'number' ? parsed.runner.startTicks : null }
          : null,
      runId: typeof parsed.runId === 'number' ? parsed.runId : 0,
      stage: typeof parsed.stage === 'string' ? parsed.stage : '',
      claim: typeof parsed.claim === 'string' ? parsed.claim : null,
      tokenHash: typeof parsed.tokenHash === 'string' ? parsed.tokenHash : null,
    };
  } catch {
    return null;
  }
}

interface ProcStat {
  state: string;
  startTicks: number;
}

/** null when /proc is unavailable (not Linux) or the process is gone. */
export function readProcStat(pid: number): ProcStat | null {
  try {
    const text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may itself contain spaces or ")".
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    const startTicks = Number(fields[19]);
    return { state: fields[0] ?? '?', startTicks: Number.isFinite(startTicks) ? startTicks : -1 };
  } catch {
    return null;
  }
}

/** Whether the process `pid` is alive and is the one that started at `startTicks` (when known). */
export function isProcessAlive(pid: number, startTicks: number | null): boolean {
  if (pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const stat = readProcStat(pid);
  if (stat === null) return !fs.existsSync('/proc/self/stat');
  // A zombie has exited; only its parent has not collected it yet.
  if (stat.state === 'Z' || stat.state === 'X') return false;
  return startTicks === null || stat.startTicks === startTicks;
}

/** Whether the runner is still at work: while it lives, the run may still report. */
export function isRunnerAlive(record: RunnerRecord): boolean {
  if (record.runner) return isProcessAlive(record.runner.pid, record.runner.startTicks);
  return record.pid !== null && isProcessAlive(record.pid, record.startTicks);
}

/** Whether any process of the run may be left: the runner, or the sandbox it leaves behind. */
export function isRunAlive(record: RunnerRecord): boolean {
  return isRunnerAlive(record) || (record.pid !== null && isProcessAlive(record.pid, record.startTicks));
}

/**
 * The host pid of a sandbox's runner: the only child of the namespace's init, which forks it
 * once the sandbox is set up (bubblewrap.c: the init forks the command just before it execs).
 * null while it is not there yet.
 */
export function sandboxRunner(init: number): { pid: number; startTicks: number | null } | null {
  let children: string;
  try {
    children = fs.readFileSync(`/proc/${init}/task/${init}/children`, 'utf8');
  } catch {
    return null;
  }
  const pid = Number(children.trim().split(' ')[0]);
  if (!Number.isInteger(pid) || pid <= 0) return null;
  return { pid, startTicks: readProcStat(pid)?.startTicks ?? null };
}

/**
 * Processes that carry `marker` (NAME=value) in their environment. Without a sandbox this is how
 * the processes of a run are found once their runner is gone: the agent and what it started run
 * in groups of their own, but all inherit the run's BATON_WORKDIR. Processes of other users are
 * unreadable and skipped; so is this process.
 */
export function processesWithEnv(marker: string): number[] {
  const found: number[] = [];
  let entries: string[];
  try {
    entries = fs.readdirSync('/proc');
  } catch {
    return found;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (fs.readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0').includes(marker)) found.push(Number(entry));
    } catch {
      // Exited meanwhile, or not ours to read.
    }
  }
  return found;
}

/**
 * SIGTERM asks the runner to stop (it stops its agent and still reports); SIGKILL ends the whole
 * run at once: the group, and the PID namespace's init, whose death takes every process of the
 * run with it, whatever group or session they moved to.
 */
export function signalRunner(record: RunnerRecord, signal: 'SIGTERM' | 'SIGKILL'): void {
  for (const target of [record.pgid !== null ? -record.pgid : null, signal === 'SIGKILL' ? record.pid : null]) {
    if (target === null) continue;
    try {
      process.kill(target, signal);
    } catch {
      // Already gone.
    }
  }
}
