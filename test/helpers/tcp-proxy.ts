import net from 'node:net';

export interface TcpProxy {
  port: number;
  /** Connections refused while cut: proof that a client tried (and failed) to reach the server. */
  readonly refused: number;
  /** Drops every connection and refuses new ones, like a database host that went away. */
  cut(): void;
  /**
   * Keeps every connection open and accepts new ones, but forwards nothing either way until
   * `restore`: a database that stopped answering (packets dropped, a frozen host, a failover).
   */
  stall(): void;
  /** Ends a cut or a stall; what a stall held back is forwarded then. */
  restore(): void;
  close(): Promise<void>;
}

/** A loopback TCP proxy whose link a test can cut, to take a real server "down" and back. */
export async function createTcpProxy(targetPort: number, targetHost = '127.0.0.1'): Promise<TcpProxy> {
  let up = true;
  let stalled = false;
  let refused = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    if (!up) {
      refused++;
      client.destroy();
      return;
    }
    const upstream = net.connect(targetPort, targetHost);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
    // After pipe(), which resumes its source. Paused sockets keep what arrives in their buffers:
    // nothing is lost, only held back.
    if (stalled) {
      client.pause();
      upstream.pause();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const cut = () => {
    up = false;
    stalled = false;
    for (const s of sockets) s.destroy();
  };
  return {
    port: (server.address() as net.AddressInfo).port,
    get refused() {
      return refused;
    },
    cut,
    stall() {
      stalled = true;
      for (const s of sockets) s.pause();
    },
    restore() {
      up = true;
      stalled = false;
      for (const s of sockets) s.resume();
    },
    close() {
      cut();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
