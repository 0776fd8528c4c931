/**
 * A delivery that cannot be processed now but will be later (the forge API timed out or answered
 * 5xx/429, the database did not answer): it goes back to pending with backoff, never dropped.
 * `delayMs` is the forge's own `Retry-After` when it sent one.
 */
export class RetryDeliveryError extends Error {
  readonly delayMs: number | undefined;
  constructor(message: string, options: { delayMs?: number; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'RetryDeliveryError';
    this.delayMs = options.delayMs;
  }
}

/** The claim was re-taken by another worker after its lease expired: this worker's result is void. */
export class DeliveryLeaseLostError extends Error {
  constructor(id: number) {
    super(`lost the lease on delivery ${id}: another worker took it over`);
    this.name = 'DeliveryLeaseLostError';
  }
}
