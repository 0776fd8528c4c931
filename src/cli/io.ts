import type { Env } from '../config/index.js';

/** Where a command writes and what it reads: the process by default, buffers in tests. */
export interface CommandIo {
  out(text: string): void;
  err(text: string): void;
  env: Env;
  /** @default globalThis.fetch */
  fetch?: typeof fetch;
  /** Stops a long-running command (logs --follow). */
  signal?: AbortSignal;
}

export function processIo(): CommandIo {
  return { out: (text) => console.log(text), err: (text) => console.error(text), env: process.env };
}
