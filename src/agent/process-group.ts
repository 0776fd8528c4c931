import { spawn as nodeSpawn, type ChildProcess, type SpawnOptions } from 'node:child_process';

export type SpawnFunction = (command: string, args: readonly string[], options: SpawnOptions) => ChildProcess;

export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Set when the process could not be started at all (e.g. ENOENT). */
  error?: Error;
}

export interface GroupProcess {
  readonly pid: number | undefined;
  /** Resolves once the process has exited and its output is read. Never rejects. */
  readonly exited: Promise<ProcessExit>;
  /** SIGTERM to the whole group, SIGKILL after `graceMs` if anything in it is still alive. */
  terminate(graceMs: number): Promise<void>;
}

export interface StartProcessOptions {
  cwd: string;
  env: NodeJS.ProcessEnv;
  onStdoutLine?: (line: string) => void;
  onStderrLine?: (line: string) => void;
  spawn?: SpawnFunction;
  /** How long to wait for stdout/stderr to close after the process exited. @default 2_000 */
  drainMs?: number;
}

/**
 * Starts a command as the leader of its own process group (`detached`), so that stopping it
 * also stops what it started: an agent's shell, its test runners, a dev server left in the
 * background. Signalling only the leader would leave those holding the workspace (and our
 * stdout pipe) open.
 */
export function startProcess(command: string, args: readonly string[], options: StartProcessOptions): GroupProcess {
  const spawn = options.spawn ?? (nodeSpawn as SpawnFunction);
  let child: ChildProcess;
  try {
    child = spawn(command, args, { cwd: options.cwd, env: options.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    const error = err instanceof Error ? err : new Error(String(err));
    return { pid: undefined, exited: Promise.resolve({ code: null, signal: null, error }), terminate: async () => {} };
  }
  let hasExited = false;
  const pid = child.pid;

  const exited = new Promise<ProcessExit>((resolve) => {
    let exit: ProcessExit | null = null;
    let openStreams = 0;
    const finish = () => {
      if (exit && openStreams === 0) resolve(exit);
    };
    for (const [stream, onLine] of [
      [child.stdout, options.onStdoutLine],
      [child.stderr, options.onStderrLine],
    ] as const) {
      if (!stream) continue;
      openStreams += 1;
      let rest = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => {
        rest += chunk;
        let index: number;
        while ((index = rest.indexOf('\n')) !== -1) {
          onLine?.(rest.slice(0, index).replace(/\r$/, ''));
          rest = rest.slice(index + 1);
        }
      });
      stream.once('close', () => {
        if (rest !== '') onLine?.(rest);
        rest = '';
        openStreams -= 1;
        finish();
      });
    }
    child.once('error', (error) => {
      // 'error' without 'exit' means the process never started.
      if (!hasExited) {
        hasExited = true;
        exit = { code: null, signal: null, error };
        openStreams = 0;
        resolve(exit);
      }
    });
    child.once('exit', (code, signal) => {
      hasExited = true;
      exit = { code, signal };
      // A grandchild that inherited our pipes keeps them open after the leader is gone; don't
      // wait for it forever.
      setTimeout(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
        openStreams = 0;
        finish();
      }, options.drainMs ?? 2_000).unref();
      finish();
    });
  });

  return {
    pid,
    exited,
    async terminate(graceMs) {
      if (pid === undefined) return;
      if (!signalGroup(pid, 'SIGTERM')) return;
      const deadline = Date.now() + graceMs;
      while (Date.now() < deadline) {
        if (hasExited && !signalGroup(pid, 0)) return;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      signalGroup(pid, 'SIGKILL');
    },
  };
}

/** kill(-pgid); false when no process of the group is left. */
export function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
    if ((err as NodeJS.ErrnoException).code === 'EPERM') return true;
    throw err;
  }
}
