import { PermanentError, RetryLaterError } from '../background/index.js';
import { ForgeError } from '../forge/index.js';

/** A forge's failure as the outbox worker reads it: permanent, retried after the forge's own wait, or retried with backoff. */
export function outboxFailure(err: unknown): unknown {
  if (err instanceof ForgeError && !err.retryable) return new PermanentError(err.message, { cause: err });
  if (err instanceof ForgeError && err.retryAfterMs !== undefined)
    return new RetryLaterError(err.message, { delayMs: err.retryAfterMs, cause: err });
  return err;
}
