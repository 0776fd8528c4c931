import net from 'node:net';

const PROBE_MS = 3_000;

/**
 * What a throw-away sandbox reaches of what runs must never reach (baton's own port, its
 * database): each `host:port` is tried directly and, when the run has an egress gate, through it
 * as a CONNECT. Returns one line per target that answered; empty when the network is contained.
 */
export async function probeUnreachable(targets: readonly string[], egressSocket?: string): Promise<string[]> {
  const reached: string[] = [];
  for (const target of targets) {
    const parsed = parseTarget(target);
    if (!parsed) continue;
    if (await connects({ host: parsed.host, port: parsed.port })) reached.push(`${target} connects directly`);
    if (egressSocket && (await tunnels(egressSocket, target))) reached.push(`${target} connects through the egress gate`);
  }
  return reached;
}

function parseTarget(target: string): { host: string; port: number } | null {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(target.trim());
  return m ? { host: m[1] ?? m[2]!, port: Number(m[3]) } : null;
}

function connects(options: net.NetConnectOpts): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(options);
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(PROBE_MS, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** Whether the gate opens a tunnel to `target` (it must answer 403). */
function tunnels(socketPath: string, target: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(socketPath);
    let text = '';
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(PROBE_MS * 2, () => done(false));
    socket.once('connect', () => socket.write(`CONNECT ${target} HTTP/1.1\r\nhost: ${target}\r\n\r\n`));
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      if (text.includes('\r\n')) done(/^HTTP\/1\.[01] 200 /.test(text));
    });
    socket.once('error', () => done(false));
    socket.once('end', () => done(false));
  });
}
