import fs from 'node:fs';
import type { Server } from 'node:net';
import os from 'node:os';
import path from 'node:path';

/** A unix socket address holds 108 bytes with its NUL; libuv truncates a longer path without a word. */
const MAX_SOCKET_PATH = 107;

/**
 * Listens on `socketPath` whatever its length. A run's directory can sit deep in a data
 * directory, past what a socket address holds: then the socket is bound through a short symlink
 * to its directory (bind follows it), so the socket still lands at `socketPath`.
 */
export async function listenUnix(server: Server, socketPath: string): Promise<void> {
  if (Buffer.byteLength(socketPath) <= MAX_SOCKET_PATH) return listen(server, socketPath);
  const short = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-sock-'));
  try {
    fs.symlinkSync(path.dirname(socketPath), path.join(short, 'd'));
    await listen(server, path.join(short, 'd', path.basename(socketPath)));
  } finally {
    fs.rmSync(short, { recursive: true, force: true });
  }
}

function listen(server: Server, address: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(address, () => {
      server.off('error', reject);
      resolve();
    });
  });
}
