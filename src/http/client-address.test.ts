import { describe, expect, it } from 'vitest';
import { createClientAddressResolver, parseTrustedProxy } from './client-address.js';

describe('client address behind trusted proxies', () => {
  it('never reads X-Forwarded-For without trusted proxies', () => {
    const resolve = createClientAddressResolver([]);
    expect(resolve('::ffff:10.0.0.7', '203.0.113.9')).toBe('10.0.0.7');
  });

  it('takes the rightmost address that is not a trusted proxy, only when the peer is one', () => {
    const resolve = createClientAddressResolver(['10.0.0.0/8', '::1']);
    expect(resolve('10.1.2.3', '203.0.113.9')).toBe('203.0.113.9');
    expect(resolve('::1', 'spoofed-by-client, 203.0.113.9, 10.0.0.2')).toBe('203.0.113.9');
    expect(resolve('192.0.2.50', '203.0.113.9')).toBe('192.0.2.50');
    expect(resolve('10.1.2.3', undefined)).toBe('10.1.2.3');
    expect(resolve('10.1.2.3', '10.0.0.9')).toBe('10.1.2.3');
  });

  it('accepts addresses and CIDRs, refuses anything else', () => {
    expect(parseTrustedProxy('10.0.0.0/8')).toEqual({ address: '10.0.0.0', prefix: 8, family: 'ipv4' });
    expect(parseTrustedProxy('fd00::/8')).toMatchObject({ family: 'ipv6', prefix: 8 });
    for (const bad of ['proxy.internal', '10.0.0.0/33', '10.0.0.0/8/1', '']) expect(parseTrustedProxy(bad)).toBeNull();
  });
});
