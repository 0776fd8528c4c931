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
  runId: number;
  stage: string;
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
      runId: typeof parsed.runId === 'number' ? parsed.runId : 0,
      stage: typeof parsed.stage === 'string' ? parsed.stage : '',
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

/** Whether the recorded runner process is still alive (and is really ours). */
export function isRunnerAlive(record: RunnerRecord): boolean {
  if (record.pid === null) return false;
  try {
    process.kill(record.pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const stat = readProcStat(record.pid);
  if (stat === null) return !fs.existsSync('/proc/self/stat');
  // A zombie has exited; only its parent has not collected it yet.
  if (stat.state === 'Z' || stat.state === 'X') return false;
  return record.startTicks === null || stat.startTicks === record.startTicks;
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
