import fs from 'node:fs';
import path from 'node:path';

export interface AgentLogOptions {
  /** Full path of the readable log. */
  file: string;
  /** Values replaced by `***` in every line before it is written or sent anywhere. */
  secrets: readonly (string | undefined)[];
  now?: () => number;
  /** Longest a written line waits in memory before it reaches the file. @default 200 */
  flushMs?: number;
}

export interface AgentLog {
  readonly file: string;
  /** Writes one line (secrets masked) and passes it to the listeners. */
  write(line: string): void;
  /** Listener for every masked line (the progress reporter). */
  onLine(listener: (line: string) => void): void;
  mask(text: string): string;
  /** A masker for text that arrives in pieces, such as a raw output stream. */
  createStreamMask(): StreamMask;
  /** Writes the lines still held in memory to the file (before someone reads it). */
  flush(): void;
  close(): void;
}

export interface StreamMask {
  /** The masked text that is safe to pass on; the last few characters wait for the next piece. */
  push(text: string): string;
  /** What is still held back. */
  end(): string;
}

/** Lines are written in blocks of about this size: one write per line made a burst of output slow. */
const WRITE_BLOCK = 64 * 1024;

/**
 * The runner's own log: the one place every line goes through, so secret masking cannot be
 * forgotten by a caller. The agent sees GITEA_TOKEN in its env and may well echo it.
 */
export function createAgentLog(options: AgentLogOptions): AgentLog {
  fs.mkdirSync(path.dirname(options.file), { recursive: true });
  const fd = fs.openSync(options.file, 'a');
  const now = options.now ?? Date.now;
  const flushMs = options.flushMs ?? 200;
  // Short values would mask ordinary words; real tokens are long.
  const secrets = [...new Set(options.secrets.filter((s): s is string => typeof s === 'string' && s.length >= 8))].sort(
    (a, b) => b.length - a.length,
  );
  const longestSecret = secrets[0]?.length ?? 0;
  const listeners: ((line: string) => void)[] = [];
  let open = true;
  let buffered: string[] = [];
  let bufferedLength = 0;
  let timer: NodeJS.Timeout | null = null;

  const mask = (text: string) => secrets.reduce((acc, secret) => (acc.includes(secret) ? acc.split(secret).join('***') : acc), text);

  const flush = () => {
    if (timer) clearTimeout(timer);
    timer = null;
    if (buffered.length === 0) return;
    const text = buffered.join('');
    buffered = [];
    bufferedLength = 0;
    try {
      fs.writeSync(fd, text);
    } catch {
      // A full disk must not stop the run; the progress stream still carries the lines.
    }
  };

  return {
    file: options.file,
    mask,
    write(raw) {
      const line = mask(raw);
      if (open) {
        const text = `${new Date(now()).toISOString()} ${line}\n`;
        buffered.push(text);
        bufferedLength += text.length;
        if (bufferedLength >= WRITE_BLOCK) flush();
        else if (!timer) {
          timer = setTimeout(flush, flushMs);
          timer.unref();
        }
      }
      for (const listener of listeners) listener(line);
    },
    onLine(listener) {
      listeners.push(listener);
    },
    flush() {
      if (open) flush();
    },
    createStreamMask() {
      // Everything but the last (longest secret - 1) characters is final: a secret that is not
      // complete in the text seen so far must start within them.
      const holdBack = Math.max(0, longestSecret - 1);
      let held = '';
      return {
        push(text) {
          const masked = mask(held + text);
          if (masked.length <= holdBack) {
            held = masked;
            return '';
          }
          held = masked.slice(masked.length - holdBack);
          return masked.slice(0, masked.length - holdBack);
        },
        end() {
          const rest = held;
          held = '';
          return rest;
        },
      };
    },
    close() {
      if (!open) return;
      flush();
      open = false;
      fs.closeSync(fd);
    },
  };
}
