import { createHmac, timingSafeEqual } from 'node:crypto';
import { HttpError } from '../web-kit/index.js';

const HEX_SHA256 = /^[0-9a-f]{64}$/i;

/** Lower-case hex HMAC-SHA256 of `body` keyed by `secret`: what Gitea puts in X-Gitea-Signature. */
export function signBody(body: Uint8Array | string, secret: string): string {
  return createHmac('sha256', secret).update(body).digest('hex');
}

/**
 * Constant-time check of a hex signature (with or without the `sha256=` prefix) against the body.
 * A malformed signature is simply wrong; it never throws.
 */
export function verifySignature(body: Uint8Array, signature: string, secret: string): boolean {
  const hex = signature.startsWith('sha256=') ? signature.slice('sha256='.length) : signature;
  if (!HEX_SHA256.test(hex)) return false;
  const expected = createHmac('sha256', secret).update(body).digest();
  return timingSafeEqual(expected, Buffer.from(hex, 'hex'));
}

/**
 * The 401 to a delivery whose signature (or GitLab token) is missing or wrong. The forge shows the
 * answer in its delivery log, where the operator is looking: it says where the fix is explained.
 */
export function refusedDelivery(message: string): HttpError {
  return new HttpError(401, 'unauthorized', `${message}; see docs/troubleshooting.md#signature-failures`);
}
