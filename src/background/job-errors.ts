/**
 * The two errors a job throws to tell its worker what to do with the row it holds, whatever the
 * queue (inbox, outbox, runs): `PermanentError` — retrying cannot help (a 404, bad credentials, an
 * invalid payload), the row fails now; `RetryLaterError` — it may pass (the forge answered 5xx or
 * 429, the database did not answer), the row goes back with backoff, no sooner than `delayMs`
 * when the other side said when (a `Retry-After`). Any other error is retried with backoff.
 */

/** Retrying cannot help: the job fails at once. Subclasses keep their own name and detail. */
export class PermanentError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PermanentError';
  }
}

/** Try again later (still an attempt), and no sooner than `delayMs` when it is set. */
export class RetryLaterError extends Error {
  readonly delayMs: number | undefined;
  constructor(message: string, options: { delayMs?: number; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'RetryLaterError';
    this.delayMs = options.delayMs;
  }
}
