import type { Context, ErrorHandler } from 'hono';

export type HttpErrorStatus = 400 | 401 | 403 | 404 | 405 | 409 | 413 | 415 | 422 | 429 | 500 | 503;

/** The one error body of every endpoint, the forge webhooks included. */
export interface ErrorEnvelope {
  error: { code: string; message: string };
}

/**
 * An error with an HTTP status, answered as `{ "error": { "code", "message" } }`. The message is
 * for the caller: it names what was wrong, and never carries a secret or another system's error
 * text (keep those in the `cause`, which is logged).
 */
export class HttpError extends Error {
  constructor(
    readonly status: HttpErrorStatus,
    readonly code: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'HttpError';
  }

  get envelope(): ErrorEnvelope {
    return { error: { code: this.code, message: this.message } };
  }

  /** What Hono's default error handler answers with, so a route group used on its own answers the same. */
  getResponse(): Response {
    return Response.json(this.envelope, { status: this.status });
  }
}

export function errorBody(code: string, message: string): ErrorEnvelope {
  return { error: { code, message } };
}

/**
 * The app's one error handler: an `HttpError` is answered as it says (headers set before it was
 * thrown, like WWW-Authenticate, are kept); anything else is logged and answered 500 without its
 * details, which may name internals.
 */
export function errorHandler(logger: { error(details: object, message: string): void }): ErrorHandler {
  return (err, c) => {
    if (err instanceof HttpError) return c.json(err.envelope, err.status);
    logger.error({ err, path: c.req.path }, 'request failed');
    return c.json(errorBody('internal', 'internal error'), 500);
  };
}

export function notFound(c: Context): Response {
  return c.json(errorBody('not_found', `no route for ${c.req.method} ${c.req.path}`), 404);
}
