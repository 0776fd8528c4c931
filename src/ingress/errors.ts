/** A delivery refused before it reached the pipeline; rendered as `{ ok: false, error }` with `status`. */
export class WebhookError extends Error {
  constructor(
    readonly status: 400 | 401 | 403 | 405 | 413 | 415 | 503,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'WebhookError';
  }
}
