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
