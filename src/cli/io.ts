import type { Env } from '../config-schema/index.js';
import { visible } from './format.js';

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

/**
 * The same io, with terminal controls in everything written shown as escapes (format.ts
 * `visible`). Applying it twice changes nothing: escaped text has no controls left.
 */
export function visibleIo(io: CommandIo): CommandIo {
  return { ...io, out: (text) => io.out(visible(text)), err: (text) => io.err(visible(text)) };
}
