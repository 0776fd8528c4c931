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
  /** Written to the process's stdin, which is then closed. @default null (stdin is /dev/null) */
  stdin?: string | null;
  /** Every piece of stdout as it arrives, before it is split into lines (the raw log). */
  onStdoutChunk?: (text: string) => void;
  /** One line of stdout; `cut` is how many characters of an overlong line were dropped (0 normally). */
  onStdoutLine?: (line: string, cut: number) => void;
  onStderrLine?: (line: string, cut: number) => void;
  /**
   * Longest line kept whole (characters); the rest of a longer line is dropped up to its newline,
   * so a process that never prints a newline cannot make the reader hold its whole output.
   * @default 1_048_576
   */
  maxLineLength?: number;
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
    const stdin = options.stdin ?? null;
    child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env,
      detached: true,
      stdio: [stdin === null ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    if (stdin !== null && child.stdin) {
      // A process that exits without reading its input makes the write fail with EPIPE; its
      // exit status says what happened, so the write error itself is of no interest.
      child.stdin.on('error', () => {});
      child.stdin.end(stdin);
    }
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
    for (const [stream, onLine, onChunk] of [
      [child.stdout, options.onStdoutLine, options.onStdoutChunk],
      [child.stderr, options.onStderrLine, undefined],
    ] as const) {
      if (!stream) continue;
      openStreams += 1;
      const lines = createLineSplitter(options.maxLineLength ?? 1_048_576, (line, cut) => onLine?.(line, cut));
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => {
        onChunk?.(chunk);
        lines.push(chunk);
      });
      stream.once('close', () => {
        lines.end();
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

export interface LineSplitter {
  push(chunk: string): void;
  /** Emits the last line when the output did not end with a newline. */
  end(): void;
}

/**
 * Splits text into lines in time linear in its length, whatever the line lengths: a chunk is
 * searched once, and a line spanning many chunks is collected as pieces (joining `rest += chunk`
 * and searching it again per chunk is quadratic in the line's length). A line is kept up to
 * `maxLineLength` characters; the rest of it is counted, not held. A trailing `\r` is removed.
 */
export function createLineSplitter(maxLineLength: number, onLine: (line: string, cut: number) => void): LineSplitter {
  let pieces: string[] = [];
  let kept = 0;
  let cut = 0;
  let open = false;
  const add = (piece: string) => {
    open = true;
    const room = maxLineLength - kept;
    if (piece.length <= room) {
      if (piece !== '') pieces.push(piece);
      kept += piece.length;
    } else {
      if (room > 0) pieces.push(piece.slice(0, room));
      kept = maxLineLength;
      cut += piece.length - Math.max(0, room);
    }
  };
  const emit = () => {
    const line = pieces.length === 1 ? pieces[0]! : pieces.join('');
    onLine(cut === 0 && line.endsWith('\r') ? line.slice(0, -1) : line, cut);
    pieces = [];
    kept = 0;
    cut = 0;
    open = false;
  };
  return {
    push(chunk) {
      let start = 0;
      for (;;) {
        const newline = chunk.indexOf('\n', start);
        if (newline === -1) {
          if (start < chunk.length) add(start === 0 ? chunk : chunk.slice(start));
          return;
        }
        add(chunk.slice(start, newline));
        emit();
        start = newline + 1;
      }
    },
    end() {
      if (open) emit();
    },
  };
}
