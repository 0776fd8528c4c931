/**
 * A run that cannot go on. Its message is the callback summary, so it must say what went wrong
 * in words a person can act on, and never contain a secret.
 */
export class RunFailure extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'RunFailure';
  }
}

/** `.claude/commands/<stage>.md` exists but cannot be used (bad front matter, empty prompt). */
export class CommandFileError extends RunFailure {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'CommandFileError';
  }
}

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
