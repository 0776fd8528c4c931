import { RunFailure } from '../agents/index.js';

export { RunFailure, CommandFileError } from '../agents/index.js';

/**
 * `git clone` / checkout of the repository failed. `transient` when the cause passes (the forge
 * answered 5xx or could not be reached, the disk is full, a timeout): the run is tried again in a
 * fresh workspace instead of failing for good.
 */
export class CheckoutError extends RunFailure {
  readonly transient: boolean;
  constructor(message: string, options?: { cause?: unknown; transient?: boolean }) {
    super(message, options);
    this.name = 'CheckoutError';
    this.transient = options?.transient ?? false;
  }
}

/** A configured install or build command failed before the agent started; `transient` as for `CheckoutError`. */
export class SetupCommandError extends RunFailure {
  readonly transient: boolean;
  constructor(message: string, options?: { cause?: unknown; transient?: boolean }) {
    super(message, options);
    this.name = 'SetupCommandError';
    this.transient = options?.transient ?? false;
  }
}
