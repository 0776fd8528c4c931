import type { RunStatus } from './states.js';

/** Raised for requests the state machine refuses (retrying a running run, …), with what to answer. */
export class TransitionError extends Error {
  constructor(
    message: string,
    readonly code: 'not_found' | 'conflict',
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'TransitionError';
  }
}

/**
 * A write tried a change of status that `TRANSITIONS` does not allow. The engine checks what it is
 * asked before it writes, so this means a bug or a race the checks missed; the transaction that
 * tried it rolls back.
 */
export class IllegalTransitionError extends TransitionError {
  constructor(
    readonly runId: number,
    readonly from: RunStatus | null,
    readonly to: RunStatus,
  ) {
    super(`run ${runId} cannot go from ${from ?? '(new)'} to ${to}`, 'conflict');
    this.name = 'IllegalTransitionError';
  }
}

/** The run's lease was lost (expired and re-claimed, or the run was cancelled): stop working on it. */
export class LeaseLostError extends Error {
  constructor(runId: number) {
    super(`run ${runId} is no longer held by this claim`);
    this.name = 'LeaseLostError';
  }
}
