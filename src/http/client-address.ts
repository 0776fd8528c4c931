import { BlockList, isIP } from 'node:net';

/**
 * The client's address behind reverse proxies the operator trusts (`http.trustedProxies`).
 * `X-Forwarded-For` is read only when the socket's peer is one of them, and then from the right:
 * each trusted hop appends the address it saw, so the first address from the right that is not a
 * trusted proxy is the client. Everything left of it was written by the client and is ignored.
 * Without trusted proxies, the header is never read (anyone could write it).
 */
export interface ClientAddressResolver {
  (peer: string | undefined, forwardedFor: string | undefined): string | undefined;
}

/** Parses `http.trustedProxies` entries: an address (`10.0.0.7`, `::1`) or a CIDR (`10.0.0.0/8`). */
export function parseTrustedProxy(entry: string): { address: string; prefix: number; family: 'ipv4' | 'ipv6' } | null {
  const [address = '', prefixText, ...rest] = entry.trim().split('/');
  const version = isIP(address);
  if (version === 0 || rest.length > 0) return null;
  const max = version === 4 ? 32 : 128;
  const prefix = prefixText === undefined ? max : /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : NaN;
  if (!(prefix >= 0 && prefix <= max)) return null;
  return { address, prefix, family: version === 4 ? 'ipv4' : 'ipv6' };
}

export function createClientAddressResolver(trustedProxies: readonly string[]): ClientAddressResolver {
  const trusted = new BlockList();
  for (const entry of trustedProxies) {
    const parsed = parseTrustedProxy(entry);
    // Config validation refuses bad entries; skipping here keeps a test's hand-built list harmless.
    if (parsed) trusted.addSubnet(parsed.address, parsed.prefix, parsed.family);
  }
  const isTrusted = (address: string) => {
    const plain = unmapped(address);
    const version = isIP(plain);
    return version !== 0 && trusted.check(plain, version === 4 ? 'ipv4' : 'ipv6');
  };

  return (peer, forwardedFor) => {
    if (peer === undefined) return undefined;
    if (trustedProxies.length === 0 || !isTrusted(peer) || !forwardedFor) return unmapped(peer);
    const hops = forwardedFor
      .split(',')
      .map((h) => h.trim())
      .filter((h) => h !== '');
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = unmapped(hops[i]!);
      if (isIP(hop) === 0) return unmapped(peer); // garbage from a proxy: fall back to the proxy itself
      if (!isTrusted(hop)) return hop;
    }
    return unmapped(peer);
  };
}

/** `::ffff:10.0.0.1` (an IPv4 peer on a dual-stack socket) → `10.0.0.1`. */
function unmapped(address: string): string {
  return address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
}
