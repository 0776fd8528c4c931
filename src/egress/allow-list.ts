import net from 'node:net';

/**
 * One entry of a run's egress allow-list: a host name (or `*.` and a domain: any name below it)
 * and an optional port. Without a port a rule allows 80 and 443, the ports of http and https.
 *
 * `private` says the rule may reach a loopback, link-local or private address: only a host the
 * operator wrote out exactly (the forge's origin, an `egress.allow` entry without `*`) may, so
 * that a public name that resolves to 127.0.0.1 (DNS rebinding) or a wildcard never opens baton's
 * own network to a run.
 */
export interface AllowRule {
  host: string;
  wildcard: boolean;
  port?: number;
  private: boolean;
}

const DEFAULT_PORTS = [80, 443];
const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/**
 * Parses `host`, `host:port`, `*.domain`, `*.domain:port`, `[v6]:port`; null when it is none of
 * them. `operator` marks rules the operator wrote (only exact ones of those may reach private
 * addresses).
 */
export function parseAllowRule(text: string, operator: boolean): AllowRule | null {
  const value = text.trim().toLowerCase();
  let host = value;
  let port: number | undefined;
  const v6 = /^\[([0-9a-f:.]+)\](?::(\d{1,5}))?$/.exec(value);
  if (v6) {
    host = v6[1]!;
    port = v6[2] === undefined ? undefined : Number(v6[2]);
    if (net.isIPv6(host) === false) return null;
  } else {
    const m = /^([^:]+)(?::(\d{1,5}))?$/.exec(value);
    if (!m) return null;
    host = m[1]!.replace(/\.$/, '');
    port = m[2] === undefined ? undefined : Number(m[2]);
  }
  if (port !== undefined && (port < 1 || port > 65535)) return null;
  const wildcard = host.startsWith('*.');
  const name = wildcard ? host.slice(2) : host;
  if (!net.isIP(name) && !name.split('.').every((label) => LABEL.test(label))) return null;
  if (wildcard && net.isIP(name)) return null;
  return { host: name, wildcard, ...(port !== undefined ? { port } : {}), private: operator && !wildcard };
}

/** Host names are compared lower-case, without a trailing dot or IPv6 brackets. */
export function normalizeHost(host: string): string {
  return host
    .trim()
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.$/, '');
}

/** The rule that lets a run reach `host:port`, if any. */
export function findRule(rules: readonly AllowRule[], host: string, port: number): AllowRule | undefined {
  const name = normalizeHost(host);
  return rules.find((rule) => {
    const ports = rule.port !== undefined ? [rule.port] : DEFAULT_PORTS;
    if (!ports.includes(port)) return false;
    return rule.wildcard ? name.endsWith(`.${rule.host}`) : name === rule.host;
  });
}

/** The rule of a URL's origin (its own port), e.g. the forge's, as the operator configured it. */
export function originRule(url: string): AllowRule | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return null;
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return null;
  const port = parsed.port === '' ? (parsed.protocol === 'https:' ? 443 : 80) : Number(parsed.port);
  return { host: normalizeHost(parsed.hostname), wildcard: false, port, private: true };
}

/**
 * Why an address is not on the internet (loopback, link-local such as cloud metadata at
 * 169.254.169.254, private, carrier-grade NAT, multicast, unspecified), or null for a public one.
 */
export function nonPublicRange(address: string): string | null {
  if (net.isIPv4(address)) return ipv4Range(address);
  if (!net.isIPv6(address)) return 'not an IP address';
  const a = address.toLowerCase();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  if (mapped) return ipv4Range(mapped[1]!);
  if (a === '::1') return 'loopback';
  if (a === '::') return 'unspecified';
  const first = parseInt(a.split(':')[0] || '0', 16);
  if ((first & 0xffc0) === 0xfe80) return 'link-local';
  if ((first & 0xfe00) === 0xfc00) return 'private (unique local)';
  if ((first & 0xff00) === 0xff00) return 'multicast';
  // NAT64 and 6to4 embed IPv4 addresses a run could otherwise reach baton's network through.
  if (a.startsWith('64:ff9b:') || first === 0x2002) return 'IPv4 translation';
  return null;
}

function ipv4Range(address: string): string | null {
  const [a, b] = address.split('.').map(Number) as [number, number, number, number];
  if (a === 127) return 'loopback';
  if (a === 0) return 'unspecified';
  if (a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168)) return 'private';
  if (a === 169 && b === 254) return 'link-local';
  if (a === 100 && b >= 64 && b <= 127) return 'private (carrier-grade NAT)';
  if (a >= 224) return 'multicast or reserved';
  return null;
}
