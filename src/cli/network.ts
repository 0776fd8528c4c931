import net from 'node:net';

/**
 * Whether a URL's host is a literal loopback or private address, or `localhost`: where Gitea
 * does not deliver webhooks unless its admin allows it (`ALLOWED_HOST_LIST`, default `external`).
 * A name that resolves to such an address is not detected: names are not looked up here.
 */
export function isPrivateOrLoopbackUrl(url: string): boolean {
  let host: string;
  try {
    host = new URL(url).hostname.replace(/^\[|\]$/g, '').toLowerCase();
  } catch {
    return false;
  }
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  if (net.isIPv4(host)) {
    const [a, b] = host.split('.').map(Number) as [number, number];
    return a === 127 || a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || (a === 169 && b === 254);
  }
  if (net.isIPv6(host)) return host === '::1' || /^f[cd]/.test(host) || /^fe[89ab]/.test(host);
  return false;
}
