import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Signature scheme of outbound event webhooks:
 *
 *   X-Baton-Timestamp: <unix seconds>
 *   X-Baton-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>.<raw body>" keyed with the endpoint's secret>
 *
 * Signing the timestamp with the body lets a receiver refuse replays: a captured delivery cannot
 * be re-sent later with a fresh timestamp without the secret.
 */
export const SIGNATURE_HEADER = 'X-Baton-Signature';
export const TIMESTAMP_HEADER = 'X-Baton-Timestamp';
export const EVENT_HEADER = 'X-Baton-Event';
export const DELIVERY_HEADER = 'X-Baton-Delivery';

/** A receiver's default window for the timestamp, either side of its clock. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

export function signWebhook(secret: string, timestamp: number, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`, 'utf8').digest('hex')}`;
}

export type VerifyResult = { ok: true } | { ok: false; reason: 'missing' | 'malformed' | 'stale' | 'mismatch' };

/**
 * For receivers (and baton's own tests): checks a delivery's signature in constant time and that
 * its timestamp is within `toleranceSeconds` of `nowMs`.
 */
export function verifyWebhook(
  secret: string,
  headers: { signature?: string | null; timestamp?: string | null },
  body: string,
  options: { nowMs?: number; toleranceSeconds?: number } = {},
): VerifyResult {
  const { signature, timestamp } = headers;
  if (!signature || !timestamp) return { ok: false, reason: 'missing' };
  if (!/^\d{1,12}$/.test(timestamp) || !/^sha256=[0-9a-f]{64}$/.test(signature)) return { ok: false, reason: 'malformed' };
  const nowSeconds = Math.floor((options.nowMs ?? Date.now()) / 1000);
  if (Math.abs(nowSeconds - Number(timestamp)) > (options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS))
    return { ok: false, reason: 'stale' };
  const expected = Buffer.from(signWebhook(secret, Number(timestamp), body));
  const actual = Buffer.from(signature);
  return expected.length === actual.length && timingSafeEqual(expected, actual) ? { ok: true } : { ok: false, reason: 'mismatch' };
}
