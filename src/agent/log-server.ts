import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface LogServerOptions {
  file: string;
  /** 0 picks a free port. */
  port: number;
  /** @default '127.0.0.1' (Coder's app proxy and port forwarding reach localhost) */
  host?: string;
  title?: string;
  /** Called before the file is read, so that lines still buffered by the writer are in it. */
  flush?: () => void;
}

export interface LogServer {
  /** Base URL it listens on. */
  readonly url: string;
  close(): Promise<void>;
}

/** How much of the log the HTML page shows; /log.txt always has all of it. */
const PAGE_TAIL_BYTES = 256 * 1024;

/**
 * Serves the live log: `/` is a page that reloads itself every few seconds and keeps the view at
 * the bottom, `/log.txt` the whole file. Lines were masked before they reached the file.
 */
export async function startLogServer(options: LogServerOptions): Promise<LogServer> {
  const title = options.title ?? 'baton agent log';
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    options.flush?.();
    if (url.pathname === '/log.txt') {
      res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' });
      if (req.method === 'HEAD') return void res.end();
      fs.createReadStream(options.file)
        .on('error', () => res.end())
        .pipe(res);
      return;
    }
    if (url.pathname === '/' || url.pathname === '/index.html') {
      const text = readTail(options.file, PAGE_TAIL_BYTES);
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
      res.end(renderPage(title, text));
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found\n');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function readTail(file: string, bytes: number): string {
  try {
    const { size } = fs.statSync(file);
    const start = Math.max(0, size - bytes);
    const fd = fs.openSync(file, 'r');
    try {
      const buffer = Buffer.alloc(size - start);
      fs.readSync(fd, buffer, 0, buffer.length, start);
      const text = buffer.toString('utf8');
      return start > 0 ? `… (earlier lines in /log.txt)\n${text.slice(text.indexOf('\n') + 1)}` : text;
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return '(no log yet)';
  }
}

function renderPage(title: string, text: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="refresh" content="3">
<title>${escapeHtml(title)}</title>
<style>
body { margin: 0; font: 13px/1.4 ui-monospace, Menlo, Consolas, monospace; background: #111; color: #ddd; }
header { position: sticky; top: 0; padding: 6px 12px; background: #222; border-bottom: 1px solid #333; }
a { color: #8cf; }
pre { margin: 0; padding: 12px; white-space: pre-wrap; word-break: break-word; }
</style>
</head>
<body>
<header>${escapeHtml(title)} · refreshes every 3 s · <a href="log.txt">full log (text)</a></header>
<pre id="log">${escapeHtml(text)}</pre>
<span id="end"></span>
<script>document.getElementById('end').scrollIntoView();</script>
</body>
</html>
`;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}
