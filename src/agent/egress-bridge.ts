import http from 'node:http';
import net from 'node:net';

/**
 * Inside a run's sandbox the network namespace has only its own loopback; the one way out is the
 * egress gate's unix socket, bound in by the local provider (`BATON_EGRESS_SOCKET`). Tools speak
 * to proxies over TCP, so the runner listens on 127.0.0.1:`port` of the sandbox and passes each
 * connection to the socket unchanged: `HTTPS_PROXY=http://127.0.0.1:<port>` then works for git,
 * curl, npm, pip and Claude Code. It is a byte pipe; every decision is the gate's, outside.
 */
export async function startEgressBridge(options: { socketPath: string; port: number; host?: string }): Promise<{ close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(options.socketPath);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.once('close', () => sockets.delete(s));
      s.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  // The bridge must not keep a finished runner alive.
  server.unref();
  return {
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/**
 * `fetch` for the runner's own calls to baton (`http://baton.internal/…`), sent to the gate's
 * socket as absolute-URI requests: Node's fetch ignores proxy variables, and the sandbox has no
 * other way to baton.
 */
export function gatedFetch(socketPath: string): typeof fetch {
  return (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const headers: Record<string, string> = { host: url.host };
    new Headers(init?.headers).forEach((value, key) => (headers[key] = value));
    // Strings (the callbacks) and bytes (a conversation's transcript): the bodies the runner sends.
    const raw = init?.body;
    const body =
      typeof raw === 'string' ? raw : raw instanceof Uint8Array ? Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength) : undefined;
    if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
    return new Promise<Response>((resolve, reject) => {
      const req = http.request({ socketPath, method: init?.method ?? 'GET', path: url.toString(), headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const answer = new Headers();
          for (const [key, value] of Object.entries(res.headers)) if (typeof value === 'string') answer.set(key, value);
          const status = res.statusCode ?? 502;
          resolve(new Response([101, 204, 205, 304].includes(status) ? null : Buffer.concat(chunks), { status, headers: answer }));
        });
      });
      req.on('error', reject);
      const signal = init?.signal;
      if (signal) {
        if (signal.aborted) req.destroy(signal.reason as Error);
        signal.addEventListener('abort', () => req.destroy(signal.reason as Error), { once: true });
      }
      req.end(body);
    });
  }) as typeof fetch;
}
