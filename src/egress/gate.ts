import dns from 'node:dns';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import { listenUnix } from './listen-unix.js';
import { findRule, nonPublicRange, normalizeHost, type AllowRule } from './allow-list.js';

/**
 * The virtual host a run reaches baton itself by (its callbacks, the forge gateway): plain HTTP in
 * absolute-URI form through the gate, which forwards only the paths `baton.allowPath` accepts.
 * Baton's real address stays unreachable from the sandbox.
 */
export const BATON_HOST = 'baton.internal';

export interface EgressRefusal {
  /** `CONNECT` for tunnels (https), else the HTTP method of a plain request. */
  method: string;
  host: string;
  port: number;
  /** Why, in words, e.g. `not on this run's allow-list` or `resolves to 127.0.0.1 (loopback)`. */
  reason: string;
  /** For requests to baton itself: the path refused. */
  path?: string;
}

export interface EgressGateOptions {
  /** Where the gate listens; bound into the run's sandbox. Replaced if it exists. */
  socketPath: string;
  rules: readonly AllowRule[];
  /** Baton's own base URL (where runs called back before the gate, maybe under a path) and the paths of it a run may use. */
  baton?: { origin: string; allowPath(path: string): boolean };
  /** Host and port pairs never reached, whatever the rules say: baton's own listener, its database. */
  deny?: readonly { host: string; port: number }[];
  /** @default dns.promises.lookup with all: true */
  lookup?: (host: string) => Promise<{ address: string; family: number }[]>;
  onRefused?: (refusal: EgressRefusal) => void;
  /** The socket's owner (the run's user), mode 0600; otherwise mode 0666 in a directory only the run reaches. */
  owner?: { uid: number; gid: number };
}

export interface EgressGate {
  readonly socketPath: string;
  close(): Promise<void>;
}

type Decision = { ok: true; address: string } | { ok: false; reason: string };

const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-connection', 'proxy-authorization', 'te', 'trailer', 'upgrade'];

/**
 * A run's egress gate: an HTTP proxy on a unix socket (CONNECT for https, absolute-URI requests for
 * http) that lets a run reach only the hosts of its allow-list. The name is resolved here, each
 * address checked, and the connection made to the checked address, so a name that resolves
 * elsewhere on a second lookup (DNS rebinding) gains nothing. Everything refused gets a 403 whose
 * body says why and how to widen the list, and is told to `onRefused`.
 */
export async function createEgressGate(options: EgressGateOptions): Promise<EgressGate> {
  const lookup = options.lookup ?? ((host: string) => dns.promises.lookup(host, { all: true, verbatim: true }));
  const sockets = new Set<Duplex>();
  let denied: Promise<{ addresses: Set<string>; any: boolean; port: number }[]> | null = null;
  const deniedAddresses = () =>
    (denied ??= Promise.all(
      (options.deny ?? []).map(async ({ host, port }) => {
        const name = normalizeHost(host);
        const any = name === '0.0.0.0' || name === '::';
        const found = net.isIP(name)
          ? [name]
          : await lookup(name).then(
              (r) => r.map((a) => a.address),
              () => [],
            );
        return { addresses: new Set(found), any, port };
      }),
    ));

  const decide = async (host: string, port: number): Promise<Decision> => {
    const rule = findRule(options.rules, host, port);
    if (!rule) return { ok: false, reason: "not on this run's allow-list" };
    let addresses: string[];
    try {
      addresses = net.isIP(normalizeHost(host)) ? [normalizeHost(host)] : (await lookup(normalizeHost(host))).map((a) => a.address);
    } catch (err) {
      return { ok: false, reason: `cannot be resolved (${(err as NodeJS.ErrnoException).code ?? err})` };
    }
    if (addresses.length === 0) return { ok: false, reason: 'cannot be resolved' };
    for (const entry of await deniedAddresses()) {
      if (entry.port !== port) continue;
      if (addresses.some((a) => entry.addresses.has(a) || (entry.any && nonPublicRange(a) !== null))) {
        return { ok: false, reason: "is baton's own service; runs reach baton only as http://baton.internal" };
      }
    }
    // Every address is checked, not only the one used: which one a client would try is not ours to know.
    for (const address of addresses) {
      const range = nonPublicRange(address);
      if (range && !rule.private) return { ok: false, reason: `resolves to ${address} (${range}), which runs may not reach` };
    }
    return { ok: true, address: addresses[0]! };
  };

  const refusalText = (refusal: EgressRefusal) =>
    refusal.path !== undefined
      ? `baton egress gate: refused ${refusal.method} http://${BATON_HOST}${refusal.path}: ${refusal.reason}\n`
      : `baton egress gate: refused ${refusal.method} ${refusal.host}:${refusal.port}: ${refusal.reason}. ` +
        'An operator can allow a host for every run with egress.allow, or for one stage with egress.stages.<stage>, in baton.yaml.\n';

  const refuse = (refusal: EgressRefusal) => {
    try {
      options.onRefused?.(refusal);
    } catch {
      // A failing observer must not keep the refusal from being answered.
    }
    return refusalText(refusal);
  };

  const onConnect = async (req: http.IncomingMessage, client: Duplex, head: Buffer) => {
    sockets.add(client);
    client.once('close', () => sockets.delete(client));
    client.on('error', () => client.destroy());
    const target = parseAuthority(req.url ?? '');
    if (!target) {
      writeRaw(client, 400, `baton egress gate: CONNECT needs host:port, got ${JSON.stringify(req.url ?? '')}\n`);
      return;
    }
    const decision = await decide(target.host, target.port);
    if (!decision.ok) {
      writeRaw(client, 403, refuse({ method: 'CONNECT', host: target.host, port: target.port, reason: decision.reason }));
      return;
    }
    const upstream = net.connect({ host: decision.address, port: target.port });
    sockets.add(upstream);
    upstream.once('close', () => sockets.delete(upstream));
    upstream.once('connect', () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    upstream.once('error', (err) => {
      if (upstream.connecting)
        writeRaw(
          client,
          502,
          `baton egress gate: ${target.host}:${target.port} did not answer (${(err as NodeJS.ErrnoException).code ?? err})\n`,
        );
      else client.destroy();
    });
    client.once('close', () => upstream.destroy());
  };

  const onRequest = async (req: http.IncomingMessage, res: http.ServerResponse) => {
    let url: URL;
    try {
      url = new URL(req.url ?? '');
    } catch {
      res
        .writeHead(400, { 'content-type': 'text/plain' })
        .end('baton egress gate: send absolute-URI requests (http://host/path) or CONNECT host:port\n');
      return;
    }
    if (url.protocol !== 'http:') {
      res
        .writeHead(400, { 'content-type': 'text/plain' })
        .end(`baton egress gate: ${url.protocol} goes through CONNECT, not as a plain request\n`);
      return;
    }
    const host = normalizeHost(url.hostname);
    const port = url.port === '' ? 80 : Number(url.port);
    if (host === BATON_HOST) {
      const path = url.pathname;
      if (!options.baton || !options.baton.allowPath(path)) {
        res
          .writeHead(403, { 'content-type': 'text/plain' })
          .end(refuse({ method: req.method ?? 'GET', host, port, path, reason: 'not a path runs may use' }));
        return;
      }
      const origin = new URL(options.baton.origin);
      forward(req, res, origin.protocol === 'https:' ? https : http, {
        host: origin.hostname,
        port: origin.port === '' ? undefined : Number(origin.port),
        servername: origin.protocol === 'https:' ? origin.hostname : undefined,
        // Baton may sit under a path (behind a proxy); the run only ever names paths below it.
        path: `${origin.pathname.replace(/\/$/, '')}${path}${url.search}`,
        hostHeader: origin.host,
      });
      return;
    }
    const decision = await decide(host, port);
    if (!decision.ok) {
      res
        .writeHead(403, { 'content-type': 'text/plain' })
        .end(refuse({ method: req.method ?? 'GET', host, port, reason: decision.reason }));
      return;
    }
    forward(req, res, http, { host: decision.address, port, path: `${url.pathname}${url.search}`, hostHeader: url.host });
  };

  const server = http.createServer((req, res) => void onRequest(req, res).catch(() => res.destroy()));
  server.on(
    'connect',
    (req: http.IncomingMessage, client: Duplex, head: Buffer) => void onConnect(req, client, head).catch(() => client.destroy()),
  );
  server.on('upgrade', (_req: http.IncomingMessage, client: Duplex) =>
    writeRaw(client, 400, 'baton egress gate: upgrades go through CONNECT\n'),
  );
  server.on('clientError', (_err, socket) => socket.destroy());

  fs.rmSync(options.socketPath, { force: true });
  await listenUnix(server, options.socketPath);
  if (options.owner) {
    fs.chownSync(options.socketPath, options.owner.uid, options.owner.gid);
    fs.chmodSync(options.socketPath, 0o600);
  } else {
    fs.chmodSync(options.socketPath, 0o666);
  }

  let closing: Promise<void> | null = null;
  return {
    socketPath: options.socketPath,
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
        for (const socket of sockets) socket.destroy();
      }).then(() => fs.rmSync(options.socketPath, { force: true }));
      return closing;
    },
  };
}

function forward(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  transport: typeof http | typeof https,
  target: { host: string; port?: number; path: string; hostHeader: string; servername?: string },
) {
  const headers: http.OutgoingHttpHeaders = { ...req.headers, host: target.hostHeader };
  for (const name of HOP_BY_HOP) delete headers[name];
  const upstream = transport.request(
    { host: target.host, port: target.port, servername: target.servername, method: req.method, path: target.path, headers },
    (answer) => {
      const back = { ...answer.headers };
      for (const name of HOP_BY_HOP) delete back[name];
      res.writeHead(answer.statusCode ?? 502, back);
      answer.pipe(res);
    },
  );
  upstream.on('error', (err) => {
    if (!res.headersSent)
      res
        .writeHead(502, { 'content-type': 'text/plain' })
        .end(`baton egress gate: upstream failed (${(err as NodeJS.ErrnoException).code ?? err})\n`);
    else res.destroy();
  });
  req.pipe(upstream);
}

/** `host:port` or `[v6]:port` of a CONNECT request. */
function parseAuthority(authority: string): { host: string; port: number } | null {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]\s]+)):(\d{1,5})$/.exec(authority);
  if (!m) return null;
  const port = Number(m[3]);
  if (port < 1 || port > 65535) return null;
  return { host: normalizeHost(m[1] ?? m[2]!), port };
}

function writeRaw(socket: Duplex, status: number, body: string) {
  const reason = status === 403 ? 'Forbidden' : status === 400 ? 'Bad Request' : 'Bad Gateway';
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\ncontent-type: text/plain\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}
