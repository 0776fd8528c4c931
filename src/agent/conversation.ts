import fs from 'node:fs';
import path from 'node:path';
import { AGENT_ENV } from '../runner-contract/index.js';
import type { AgentAdapter } from '../agents/index.js';
import type { AgentUsage } from '../runner-contract/index.js';

/**
 * The runner's side of a conversation (the server's is runs/conversation.ts).
 *
 * Asking: the agent runs `baton ask "<question>"` (a shim on its PATH, cli/ask.ts), which appends
 * the question to a file of the run's state directory. When the agent's process ends with a
 * question there, the runner pushes the working branch, uploads the session's transcript and
 * reports the run as waiting instead of finished.
 *
 * Resuming: the next turn's runner reads the transcript back, writes the agent CLI's session files
 * where the CLI looks for them (same HOME-relative paths, same working directory), checks out the
 * branch, and starts the CLI with its resume option and the reply as the prompt.
 *
 * The transcript is one JSONL document: a header line, then one line per session file (the
 * CLI's own, byte for byte), then the agent's stream of each turn so far (what the dashboard and
 * `baton logs --transcript` show).
 */

/** Longest question kept (the server cuts at the same length). */
export const MAX_QUESTION_CHARS = 8_000;
/** Most bytes of session files packed (the server keeps at most 16 MiB gzip'd). */
const MAX_SESSION_BYTES = 48 * 1024 * 1024;
const MAX_SESSION_FILES = 5_000;
/**
 * Most bytes of one turn's agent stream kept in the transcript: its first and last half each (how
 * the turn began, and how it ended: the final answer and the cost); the lines between are counted.
 * The runner holds them as lines and packs them at once: 4 MiB took a runner on a 32 MiB heap
 * past its limit (test/e2e/agent-output.test.ts), 1 MiB stays well inside.
 */
const MAX_STREAM_BYTES = 1024 * 1024;
const QUESTION_FILE = 'question.jsonl';

export const TRANSCRIPT_FORMAT = 'baton-transcript';

export interface TranscriptHeader {
  format: typeof TRANSCRIPT_FORMAT;
  version: 1;
  agent: string;
  /** The agent's working directory: the CLI finds the session only from the same one. */
  cwd: string;
  sessionId: string;
  /** The branch the agent worked on (pushed before the upload); null: detached. */
  branch: string | null;
}

export interface SessionFile {
  /** Relative to HOME, `/`-separated. */
  path: string;
  content: Buffer;
}

/**
 * One turn of the conversation, as the dashboard and `baton logs --transcript` show it. Every
 * run keeps its turns (a run that never asks has one); the session files, which the next turn
 * needs to resume, are the last asking turn's (a later turn that did not ask keeps them, for its
 * retry).
 */
export interface TranscriptTurn {
  turn: number;
  /** What the turn began with: the stage prompt, or the reply that resumed it (masked). */
  prompt: string;
  /** Who wrote the prompt: `baton` for the stage prompt, else the replying login. */
  by: string;
  /** The human reply this turn resumed with, as written (masked); absent on a first turn. */
  reply?: string;
  /** The question the turn ended with, when it asked. */
  question: string | null;
  /** The agent's stdout lines (stream-json for Claude Code), masked. */
  stream: string[];
  /** Whether lines were cut from the middle of the stream: `cutLines` of them, before `stream[cutAt]`. */
  truncated: boolean;
  cutLines?: number;
  cutAt?: number;
  /** The turn's own tokens and cost (each turn is one process of the agent CLI). */
  usage?: AgentUsage | null;
  costUsd?: number | null;
  startedAt?: number;
  endedAt?: number;
}

export interface Transcript {
  header: TranscriptHeader;
  files: SessionFile[];
  turns: TranscriptTurn[];
}

/** The env that lets the agent ask: `baton` on its PATH, and where `baton ask` writes. */
export function askEnv(stateDir: string, basePath: string | undefined): Record<string, string> {
  const binDir = path.join(stateDir, 'bin');
  fs.mkdirSync(binDir, { recursive: true });
  // The same node and the same baton this runner is (both readable inside the sandbox).
  const bin = process.argv[1] ?? '';
  const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  fs.writeFileSync(path.join(binDir, 'baton'), `#!/bin/sh\nexec ${quote(process.execPath)} ${quote(bin)} "$@"\n`, { mode: 0o755 });
  fs.chmodSync(path.join(binDir, 'baton'), 0o755);
  return {
    PATH: basePath ? `${binDir}${path.delimiter}${basePath}` : binDir,
    [AGENT_ENV.questionFile]: path.join(stateDir, QUESTION_FILE),
  };
}

/** Forgets a question of an earlier process in this state directory (a turn starts with none). */
export function clearQuestion(stateDir: string): void {
  fs.rmSync(path.join(stateDir, QUESTION_FILE), { force: true });
}

/** The question the agent asked (several `baton ask` in one turn are joined), or null. */
export function readQuestion(stateDir: string): { text: string; for: string | null } | null {
  let raw: string;
  try {
    // Written by the agent: read a bounded amount, and each line as untrusted JSON.
    const fd = fs.openSync(path.join(stateDir, QUESTION_FILE), fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
    try {
      const buffer = Buffer.alloc(256 * 1024);
      const n = fs.readSync(fd, buffer, 0, buffer.length, 0);
      raw = buffer.subarray(0, n).toString('utf8');
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return null;
  }
  const texts: string[] = [];
  let forWhom: string | null = null;
  for (const line of raw.split('\n')) {
    try {
      const entry = JSON.parse(line) as { text?: unknown; for?: unknown };
      if (typeof entry.text === 'string' && entry.text.trim() !== '') texts.push(entry.text.trim());
      if (typeof entry.for === 'string' && /^@?[\w.-]{1,80}$/.test(entry.for)) forWhom = entry.for.replace(/^@/, '');
    } catch {
      // A torn or foreign line: skipped.
    }
  }
  if (texts.length === 0) return null;
  return { text: texts.join('\n\n').slice(0, MAX_QUESTION_CHARS), for: forWhom };
}

/**
 * The CLI's session files under `adapter.transcriptPaths(home, cwd)`: regular files only (a
 * symlink the agent planted is not followed), bounded in number and size.
 */
export function collectSessionFiles(adapter: AgentAdapter, home: string, cwd: string): SessionFile[] {
  const files: SessionFile[] = [];
  let bytes = 0;
  const visit = (absolute: string) => {
    if (files.length >= MAX_SESSION_FILES) return;
    let stat: fs.Stats;
    try {
      stat = fs.lstatSync(absolute);
    } catch {
      return;
    }
    if (stat.isDirectory()) {
      for (const name of fs.readdirSync(absolute).sort()) visit(path.join(absolute, name));
      return;
    }
    if (!stat.isFile() || bytes + stat.size > MAX_SESSION_BYTES) return;
    const relative = path.relative(home, absolute).split(path.sep).join('/');
    if (relative.startsWith('..') || path.isAbsolute(relative)) return;
    bytes += stat.size;
    files.push({ path: relative, content: fs.readFileSync(absolute) });
  };
  for (const root of adapter.transcriptPaths(home, cwd)) visit(root);
  return files;
}

/**
 * The agent's stream of this turn (its raw stdout file, already masked): whole when it fits
 * `maxBytes`, else its first and last half, with the number of lines cut between them.
 */
export function readStream(
  file: string,
  maxBytes = MAX_STREAM_BYTES,
): { lines: string[]; truncated: boolean; cutLines: number; cutAt: number } {
  const none = { lines: [], truncated: false, cutLines: 0, cutAt: 0 };
  let fd: number;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
  } catch {
    return none;
  }
  try {
    const size = fs.fstatSync(fd).size;
    const read = (position: number, length: number) => {
      const buffer = Buffer.alloc(length);
      const n = fs.readSync(fd, buffer, 0, length, position);
      return buffer.subarray(0, n).toString('utf8');
    };
    const split = (text: string) => text.split('\n').filter((l) => l.trim() !== '');
    if (size <= maxBytes) return { lines: split(read(0, size)), truncated: false, cutLines: 0, cutAt: 0 };
    const half = Math.floor(maxBytes / 2);
    // A line cut at either edge is no JSON: dropped rather than shown half.
    const headText = read(0, half);
    const head = split(headText.slice(0, headText.lastIndexOf('\n') + 1));
    const tailText = read(size - half, half);
    const tail = split(tailText.slice(tailText.indexOf('\n') + 1));
    // The lines between, counted by their newlines without holding them.
    let between = 0;
    const chunk = Buffer.alloc(1024 * 1024);
    const from = Buffer.byteLength(headText.slice(0, headText.lastIndexOf('\n') + 1));
    const to = size - Buffer.byteLength(tailText.slice(tailText.indexOf('\n') + 1));
    for (let at = from; at < to;) {
      const n = fs.readSync(fd, chunk, 0, Math.min(chunk.length, to - at), at);
      if (n <= 0) break;
      for (let i = 0; i < n; i++) if (chunk[i] === 0x0a) between++;
      at += n;
    }
    return { lines: [...head, ...tail], truncated: true, cutLines: between, cutAt: head.length };
  } catch {
    return none;
  } finally {
    fs.closeSync(fd);
  }
}

export function packTranscript(transcript: Transcript): Buffer {
  const lines = [JSON.stringify(transcript.header)];
  for (const file of transcript.files) lines.push(JSON.stringify({ file: file.path, base64: file.content.toString('base64') }));
  for (const turn of transcript.turns) lines.push(JSON.stringify({ turn }));
  return Buffer.from(`${lines.join('\n')}\n`);
}

/** Reads a transcript back; throws on one that is not baton's (the caller reports it). */
export function unpackTranscript(jsonl: Buffer | string): Transcript {
  const lines = jsonl
    .toString()
    .split('\n')
    .filter((l) => l.trim() !== '');
  const header = JSON.parse(lines[0] ?? '{}') as Partial<TranscriptHeader>;
  if (header.format !== TRANSCRIPT_FORMAT || typeof header.sessionId !== 'string' || typeof header.cwd !== 'string') {
    throw new Error('not a baton transcript');
  }
  const files: SessionFile[] = [];
  const turns: TranscriptTurn[] = [];
  for (const line of lines.slice(1)) {
    const entry = JSON.parse(line) as { file?: unknown; base64?: unknown; turn?: TranscriptTurn };
    if (typeof entry.file === 'string' && typeof entry.base64 === 'string') {
      files.push({ path: entry.file, content: Buffer.from(entry.base64, 'base64') });
    } else if (entry.turn && typeof entry.turn === 'object') {
      turns.push(entry.turn);
    }
  }
  return { header: header as TranscriptHeader, files, turns };
}

/**
 * Writes the session files back under HOME. Each path must lie under one of the places the
 * adapter names for the recorded working directory: a transcript can only ever restore the
 * CLI's own session files, never write elsewhere (`..`, absolute paths, other dot files).
 */
export function restoreSessionFiles(adapter: AgentAdapter, home: string, transcript: Transcript): number {
  const roots = adapter.transcriptPaths(home, transcript.header.cwd).map((r) => path.resolve(r));
  let written = 0;
  for (const file of transcript.files) {
    const target = path.resolve(home, file.path);
    const allowed = roots.some((root) => target === root || target.startsWith(`${root}${path.sep}`));
    if (!allowed || file.path.split('/').includes('..')) throw new Error(`the transcript names a file outside the session: ${file.path}`);
    fs.mkdirSync(path.dirname(target), { recursive: true, mode: 0o700 });
    fs.writeFileSync(target, file.content, { mode: 0o600 });
    written += 1;
  }
  return written;
}

/** `…/api/runs/42/complete` → `…/api/runs/42/transcript`. */
export function transcriptUrl(callbackUrl: string): string {
  const url = new URL(callbackUrl);
  url.pathname = url.pathname.replace(/\/complete\/?$/, '/transcript');
  return url.toString();
}

export interface TranscriptClient {
  /**
   * Stores the transcript; false (after logging why) when the server did not take it. `attempts`
   * bounds the tries (a run's only turn, which no later turn needs, tries less).
   */
  upload(jsonl: Buffer, options?: { attempts?: number }): Promise<boolean>;
  /** The transcript kept for this run; null when there is none. Throws when the server cannot be asked. */
  download(): Promise<Buffer | null>;
}

export function createTranscriptClient(options: {
  callbackUrl: string;
  token: string;
  fetch?: typeof fetch;
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
  log: (line: string) => void;
  /**
   * Longest time spent retrying one request: as long as the completion callback's (callback-client.ts),
   * since both wait out the same thing, a server restarting or away. A shorter budget turned a
   * restart that took longer under load into a failed resume, or a question dropped at its upload.
   * @default 900_000 (15 min)
   */
  maxRetryMs?: number;
}): TranscriptClient {
  const doFetch = options.fetch ?? fetch;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const now = options.now ?? Date.now;
  const url = transcriptUrl(options.callbackUrl);
  const maxRetryMs = options.maxRetryMs ?? 15 * 60_000;
  const headers = { authorization: `Bearer ${options.token}` };
  // A restarted server or a passing network fault: tried again; a refusal (4xx) is final.
  async function withRetries(what: string, request: () => Promise<Response>, tries = Infinity): Promise<Response | null> {
    const started = now();
    let problem = '';
    for (let attempt = 1; ; attempt++) {
      try {
        const res = await request();
        if (res.status < 500) return res;
        await res.body?.cancel();
        problem = `HTTP ${res.status}`;
      } catch (err) {
        problem = err instanceof Error ? err.message : String(err);
      }
      const delay = Math.min(1_000 * 2 ** (attempt - 1), 30_000);
      if (attempt >= tries || now() - started + delay > maxRetryMs) {
        options.log(`[baton] ${what} failed after ${attempt} attempts: ${problem}`);
        return null;
      }
      if (attempt === 1) options.log(`[baton] ${what} failed (${problem}); retrying`);
      await sleep(delay);
    }
  }
  return {
    async upload(jsonl, uploadOptions) {
      const res = await withRetries(
        'the transcript upload',
        () =>
          doFetch(url, {
            method: 'PUT',
            headers: { ...headers, 'content-type': 'application/x-ndjson' },
            body: new Uint8Array(jsonl),
            signal: AbortSignal.timeout(60_000),
          }),
        uploadOptions?.attempts,
      );
      if (!res) return false;
      if (!res.ok) {
        options.log(`[baton] the server did not keep the transcript: HTTP ${res.status} ${(await res.text()).slice(0, 300)}`);
        return false;
      }
      await res.body?.cancel();
      return true;
    },
    async download() {
      const res = await withRetries('reading the transcript', () => doFetch(url, { headers, signal: AbortSignal.timeout(60_000) }));
      if (!res) throw new Error('the server could not be asked for the transcript');
      if (res.status === 404) {
        await res.body?.cancel();
        return null;
      }
      if (!res.ok) throw new Error(`the server refused the transcript: HTTP ${res.status}`);
      return Buffer.from(await res.arrayBuffer());
    },
  };
}
