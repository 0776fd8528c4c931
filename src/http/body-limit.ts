import type { MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { HttpError } from './errors.js';

/**
 * Refuses a body over `maxBytes` with 413 before a handler reads it. Content-Length is checked
 * first; a chunked body is counted as it streams in and cut off at the limit, never buffered whole.
 */
export function limitBody(maxBytes: number): MiddlewareHandler {
  return bodyLimit({
    maxSize: maxBytes,
    onError: () => {
      throw new HttpError(413, 'too_large', `body is larger than the limit of ${maxBytes} bytes`);
    },
  });
}
