/**
 * A forge call that failed. `status` is the HTTP status (absent for network failures and
 * timeouts); `forgeMessage` is the forge's own `message`, never the request's credentials.
 *
 * Retryable: network errors, timeouts, 5xx, 408 and 429. Everything else (401, 403, 404, 422,
 * 423 archived, …) is permanent: asking again will not change the answer.
 */
export class ForgeError extends Error {
  readonly status: number | undefined;
  readonly kind: 'http' | 'network' | 'timeout' | 'protocol';
  readonly forgeMessage: string | undefined;
  readonly retryable: boolean;
  /** From a `Retry-After` header, when the forge sent one. */
  readonly retryAfterMs: number | undefined;

  constructor(
    message: string,
    details: {
      kind: ForgeError['kind'];
      status?: number;
      forgeMessage?: string;
      retryAfterMs?: number;
      cause?: unknown;
    },
  ) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = 'ForgeError';
    this.kind = details.kind;
    this.status = details.status;
    this.forgeMessage = details.forgeMessage;
    this.retryAfterMs = details.retryAfterMs;
    this.retryable = details.kind !== 'http' || isRetryableStatus(details.status ?? 0);
  }
}

export function isRetryableStatus(status: number): boolean {
  return status >= 500 || status === 408 || status === 429;
}
