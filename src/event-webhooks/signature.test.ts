import { describe, expect, it } from 'vitest';
import { signWebhook, verifyWebhook } from './signature.js';

const secret = 'whsec-0123456789abcdef';
const body = '{"id":"evt_1","event":"run.succeeded"}';
const nowMs = 1_700_000_000_000;
const ts = Math.floor(nowMs / 1000);

describe('event webhook signatures', () => {
  it('is HMAC-SHA256 of "timestamp.body" as sha256=<hex>', () => {
    // Computed independently (Python hmac) so a receiver in another language gets the same value.
    expect(signWebhook(secret, ts, body)).toBe('sha256=f0b51c503a19268152736cbbd9d3bf5d41131f866d3fc65417ce49d8e8890d5e');
    expect(signWebhook(secret, ts, body)).not.toBe(signWebhook(secret, ts + 1, body));
    expect(verifyWebhook(secret, { signature: signWebhook(secret, ts, body), timestamp: String(ts) }, body, { nowMs })).toEqual({
      ok: true,
    });
  });

  it('refuses a changed body, another secret, a moved timestamp, a replay and junk', () => {
    const signature = signWebhook(secret, ts, body);
    expect(verifyWebhook(secret, { signature, timestamp: String(ts) }, body.replace('succeeded', 'failed'), { nowMs })).toEqual({
      ok: false,
      reason: 'mismatch',
    });
    expect(verifyWebhook('another-secret-value', { signature, timestamp: String(ts) }, body, { nowMs })).toEqual({
      ok: false,
      reason: 'mismatch',
    });
    expect(verifyWebhook(secret, { signature, timestamp: String(ts + 60) }, body, { nowMs })).toEqual({ ok: false, reason: 'mismatch' });
    expect(verifyWebhook(secret, { signature, timestamp: String(ts) }, body, { nowMs: nowMs + 301_000 })).toEqual({
      ok: false,
      reason: 'stale',
    });
    expect(verifyWebhook(secret, { signature: 'sha256=zz', timestamp: String(ts) }, body, { nowMs })).toEqual({
      ok: false,
      reason: 'malformed',
    });
    expect(verifyWebhook(secret, { timestamp: String(ts) }, body, { nowMs })).toEqual({ ok: false, reason: 'missing' });
  });
});
