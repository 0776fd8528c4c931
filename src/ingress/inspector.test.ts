import { describe, expect, it } from 'vitest';
import { decodeCursor, encodeCursor, InspectorError, MASK, maskBody, maskHeaders } from './inspector.js';

describe('the deliveries inspector', () => {
  it('masks signature and secret-looking headers, and keeps the others', () => {
    const masked = maskHeaders({
      'X-Gitea-Delivery': 'f6266f16-1bf3-46a5-9ea4-602e06ead473',
      'X-Gitea-Event': 'issues',
      'X-Gitea-Signature': 'abc123',
      'X-Hub-Signature-256': 'sha256=abc123',
      'X-Forgejo-Signature': 'abc123',
      Authorization: 'Bearer s3cr3t-t0ken',
      'X-Api-Key': 'k',
      'X-Session-Id': 's',
      'Content-Type': 'application/json',
    });
    expect(masked).toEqual({
      'X-Gitea-Delivery': 'f6266f16-1bf3-46a5-9ea4-602e06ead473',
      'X-Gitea-Event': 'issues',
      'X-Gitea-Signature': MASK,
      'X-Hub-Signature-256': MASK,
      'X-Forgejo-Signature': MASK,
      Authorization: MASK,
      'X-Api-Key': MASK,
      'X-Session-Id': MASK,
      'Content-Type': 'application/json',
    });
    // An empty signature (a webhook without secret) shows that it was empty.
    expect(maskHeaders({ 'X-Gitea-Signature': '' })).toEqual({ 'X-Gitea-Signature': '' });
  });

  it('masks the deprecated top-level secret of old payloads and leaves other bodies byte for byte', () => {
    const old = '{\n  "secret": "12345",\n  "action": "synchronized",\n  "number": 1\n}';
    const shown = maskBody(old);
    expect(shown).not.toContain('12345');
    expect(JSON.parse(shown)).toEqual({ secret: MASK, action: 'synchronized', number: 1 });
    const current = '{"action":"opened",  "number": 2, "issue": {"secret": "not the webhook secret"}}';
    expect(maskBody(current)).toBe(current);
    expect(maskBody('{"secret": "", "a": 1}')).toBe('{"secret": "", "a": 1}');
    expect(maskBody('not json')).toBe('not json');
  });

  it('gives out opaque cursors and names a forged one', () => {
    const cursor = encodeCursor(42);
    expect(cursor).not.toContain('42');
    expect(decodeCursor(cursor)).toBe(42);
    for (const bad of [
      '42',
      'e30',
      Buffer.from('{"before":"x"}').toString('base64url'),
      Buffer.from('{"before":-1}').toString('base64url'),
    ]) {
      expect(() => decodeCursor(bad)).toThrow(InspectorError);
    }
    expect(() => decodeCursor('zz')).toThrow(/use a page's nextCursor/);
  });
});
