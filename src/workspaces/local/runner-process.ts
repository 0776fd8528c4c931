import fs from 'node:fs';

/**
 * What a local workspace records about its runner in `runner.json`. No secrets: the tokens live
 * only in the runner's environment.
 */
export interface RunnerRecord {
  /** null between claiming the directory and spawning the process. */
  pid: number | null;
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
    return {
      pid: typeof parsed.pid === 'number' ? parsed.pid : null,
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

/** Signals the runner's process group; false when nothing was there to signal. */
export function signalRunnerGroup(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pid, signal);
    return true;
  } catch {
    return false;
  }
}
