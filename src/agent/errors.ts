import { RunFailure } from '../agents/index.js';

export { RunFailure, CommandFileError } from '../agents/index.js';

/** `git clone` / checkout of the repository failed. */
export class CheckoutError extends RunFailure {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'CheckoutError';
  }
}

/** A configured install or build command failed before the agent started. */
export class SetupCommandError extends RunFailure {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SetupCommandError';
  }
}
