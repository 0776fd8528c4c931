import { errorMessage } from '../background/index.js';
import { PermanentError } from '../background/index.js';
import { type Workspace, type WorkspaceProvider, type WorkspaceStatus } from './types.js';

export interface TeardownOptions {
  /** How long to wait for the stop before deleting anyway. @default 300_000 (5 min) */
  waitStoppedMs?: number;
  /** How long to wait for the delete to finish before reporting failure. @default 300_000 */
  waitGoneMs?: number;
  /** @default 2_000 */
  pollMs?: number;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

export interface TeardownResult {
  /** `already-gone`: nothing existed under that name. */
  outcome: 'deleted' | 'already-gone';
  /** False when the stop did not finish in time (or failed) and the delete went ahead anyway. */
  stoppedCleanly: boolean;
  /** Why the stop was skipped or cut short, for the log. */
  note?: string;
}

/** Thrown when the workspace is still there after the delete; the caller's retry job tries again. */
export class TeardownIncompleteError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TeardownIncompleteError';
  }
}

const SETTLED: readonly WorkspaceStatus[] = ['stopped', 'failed', 'canceled', 'deleting', 'deleted'];

/**
 * Stop → wait until stopped (bounded) → delete → confirm gone. A stop that never finishes (a build
 * stuck in `stopping`) does not block the delete. Throws only when the workspace is still present
 * at the end (or on a permanent provider error), so the run engine's retried teardown job can
 * simply call this again: every step is idempotent.
 */
export async function teardownWorkspace(provider: WorkspaceProvider, name: string, options: TeardownOptions = {}): Promise<TeardownResult> {
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const pollMs = options.pollMs ?? 2_000;
  const waitStoppedMs = options.waitStoppedMs ?? 300_000;
  const waitGoneMs = options.waitGoneMs ?? 300_000;

  const waitFor = async (done: (w: Workspace | null) => boolean, timeoutMs: number): Promise<Workspace | null | 'timeout'> => {
    const deadline = now() + timeoutMs;
    for (;;) {
      const current = await provider.get(name);
      if (done(current)) return current;
      if (now() >= deadline) return 'timeout';
      await sleep(pollMs);
    }
  };

  const first = await provider.get(name);
  if (!first) return { outcome: 'already-gone', stoppedCleanly: true };

  let stoppedCleanly = true;
  let note: string | undefined;
  if (!SETTLED.includes(first.status)) {
    try {
      await provider.stop(name);
      const stopped = await waitFor((w) => w === null || SETTLED.includes(w.status), waitStoppedMs);
      if (stopped === 'timeout') {
        stoppedCleanly = false;
        note = `not stopped after ${waitStoppedMs} ms; deleting anyway`;
      }
    } catch (error) {
      if (error instanceof PermanentError) throw error;
      stoppedCleanly = false;
      note = `stop failed (${errorMessage(error)}); deleting anyway`;
    }
  }

  await provider.delete(name);
  const gone = await waitFor((w) => w === null || w.status === 'deleted', waitGoneMs);
  if (gone === 'timeout') {
    const current = await provider.get(name);
    throw new TeardownIncompleteError(
      `workspace "${name}" still exists (${current?.status ?? 'unknown'}) ${waitGoneMs} ms after its delete was requested`,
    );
  }
  return { outcome: 'deleted', stoppedCleanly, ...(note ? { note } : {}) };
}
