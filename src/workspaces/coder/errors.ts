import { PermanentError } from '../../background/index.js';
import type { CoderResponse } from './api-types.js';

function describeResponse(body: CoderResponse): string {
  const parts = [body.message];
  if (body.detail) parts.push(`(${body.detail})`);
  for (const v of body.validations ?? []) parts.push(`[${v.field}: ${v.detail}]`);
  return parts.join(' ');
}

/**
 * Coder answered with an error that retrying may fix (5xx after the retries ran out, or a status
 * the caller did not expect). `status` and `response` let callers decide; the message names the
 * request and Coder's own words, never the session token.
 */
export class CoderApiError extends Error {
  constructor(
    readonly status: number,
    readonly request: string,
    readonly response: CoderResponse,
  ) {
    super(`Coder ${request} failed with HTTP ${status}: ${describeResponse(response)}`);
    this.name = 'CoderApiError';
  }
}

/**
 * Coder refused the request in a way retrying will not fix: 400 (validation: the message carries
 * Coder's `message` and every `validations` entry), 401/403 (credentials or permissions).
 */
export class CoderPermanentError extends PermanentError {
  readonly status: number;
  readonly response: CoderResponse;
  constructor(status: number, request: string, response: CoderResponse) {
    const what =
      status === 401
        ? 'Coder rejected the session token (check CODER_TOKEN)'
        : status === 403
          ? 'Coder denied access (the token lacks permission for the template or workspace)'
          : 'Coder rejected the request';
    super(`${what}: HTTP ${status} on ${request}: ${describeResponse(response)}`);
    this.name = 'CoderPermanentError';
    this.status = status;
    this.response = response;
  }

  get isAuthFailure(): boolean {
    return this.status === 401 || this.status === 403;
  }
}

/** Coder could not be reached (connection refused or reset, timeout) after every retry. */
export class CoderUnavailableError extends Error {
  constructor(request: string, reason: string, options?: { cause?: unknown }) {
    super(`Coder ${request} failed: ${reason}`, options);
    this.name = 'CoderUnavailableError';
  }
}

/** A wait on Coder (build finishing, workspace gone) ran past its bound. Retryable. */
export class CoderWaitTimeoutError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CoderWaitTimeoutError';
  }
}
