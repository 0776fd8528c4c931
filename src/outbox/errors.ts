/** Retrying cannot help (a 404, an archived repository, a bad payload): the entry becomes `failed`. */
export class PermanentDeliveryError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PermanentDeliveryError';
  }
}

/** Try again no sooner than `delayMs` (e.g. a `Retry-After`); still counts as an attempt. */
export class RetryLaterError extends Error {
  constructor(
    message: string,
    readonly delayMs: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'RetryLaterError';
  }
}
