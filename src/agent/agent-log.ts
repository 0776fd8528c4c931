import fs from 'node:fs';
import path from 'node:path';

export interface AgentLogOptions {
  /** Full path of the readable log. */
  file: string;
  /** Values replaced by `***` in every line before it is written or sent anywhere. */
  secrets: readonly (string | undefined)[];
  now?: () => number;
}

export interface AgentLog {
  readonly file: string;
  /** Writes one line (secrets masked) and passes it to the listeners. */
  write(line: string): void;
  /** Listener for every masked line (the progress reporter). */
  onLine(listener: (line: string) => void): void;
  mask(text: string): string;
  close(): void;
}

/**
 * The runner's own log: the one place every line goes through, so secret masking cannot be
 * forgotten by a caller. The agent sees GITEA_TOKEN in its env and may well echo it.
 */
export function createAgentLog(options: AgentLogOptions): AgentLog {
  fs.mkdirSync(path.dirname(options.file), { recursive: true });
  const fd = fs.openSync(options.file, 'a');
  const now = options.now ?? Date.now;
  // Short values would mask ordinary words; real tokens are long.
  const secrets = [...new Set(options.secrets.filter((s): s is string => typeof s === 'string' && s.length >= 8))].sort(
    (a, b) => b.length - a.length,
  );
  const listeners: ((line: string) => void)[] = [];
  let open = true;

  const mask = (text: string) => secrets.reduce((acc, secret) => acc.split(secret).join('***'), text);

  return {
    file: options.file,
    mask,
    write(raw) {
      const line = mask(raw);
      if (open) {
        try {
          fs.writeSync(fd, `${new Date(now()).toISOString()} ${line}\n`);
        } catch {
          // A full disk must not stop the run; the progress stream still carries the line.
        }
      }
      for (const listener of listeners) listener(line);
    },
    onLine(listener) {
      listeners.push(listener);
    },
    close() {
      if (!open) return;
      open = false;
      fs.closeSync(fd);
    },
  };
}
