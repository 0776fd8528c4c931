import net from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bearer, startTestApp, type TestApp } from '../helpers/app.js';
import { createSqliteTestStore, type TestStore } from '../helpers/stores.js';
import { until } from '../helpers/until.js';

/**
 * The HTTP server's doors as they were: no CSP, `nosniff` or frame protection; 30 slow connections
 * still open past 20 s under Node's defaults (300 s request timeout, no connection cap); bodies of
 * any size on routes that read one. Against the real server `baton serve` runs (createHttpServer).
 */

/** A raw connection, to be slow or idle on purpose; `closed` resolves when the server hangs up. */
function connect(url: string): Promise<{ socket: net.Socket; closed: Promise<string> }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => {
      let received = '';
      socket.on('data', (d: Buffer) => (received += d.toString()));
      const closed = new Promise<string>((done) => socket.once('close', () => done(received)));
      resolve({ socket, closed });
    });
    socket.once('error', reject);
  });
}

describe('security headers', () => {
  let t: TestStore;
  let server: TestApp;

  beforeEach(async () => {
    t = await createSqliteTestStore();
    server = await startTestApp(t);
  });
  afterEach(async () => {
    await server?.close();
    await t?.cleanup();
  });

  it('sends CSP without inline script, nosniff, no framing and no referrer on every HTML and API answer', async () => {
    const answers = await Promise.all([
      fetch(`${server.url}/`),
      fetch(`${server.url}/dashboard/app.js`),
      fetch(`${server.url}/api/runs`, { headers: bearer() }),
      fetch(`${server.url}/api/runs`),
      fetch(`${server.url}/no/such/page`),
      fetch(`${server.url}/ready`),
      fetch(`${server.url}/webhook/gitea`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } }),
    ]);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 401, 404, 200, expect.any(Number)]);
    for (const answer of answers) {
      const csp = answer.headers.get('content-security-policy') ?? '';
      expect(csp).toContain("default-src 'none'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).not.toContain('unsafe-inline');
      expect(csp).toContain("frame-ancestors 'none'");
      expect(answer.headers.get('x-content-type-options')).toBe('nosniff');
      expect(answer.headers.get('x-frame-options')).toBe('DENY');
      expect(answer.headers.get('referrer-policy')).toBe('no-referrer');
    }
  });
});

describe('HTTP server limits', () => {
  let t: TestStore;
  let server: TestApp;

  const start = async (http: string) => {
    t = await createSqliteTestStore();
    server = await startTestApp(t, { file: `http: ${http}\n`, env: { BATON_CONFIG: 'baton.yaml' } });
  };
  afterEach(async () => {
    await server?.close();
    await t?.cleanup();
  });

  it('cuts off 30 clients that send their headers too slowly', async () => {
    await start('{ headersTimeoutSeconds: 1, requestTimeoutSeconds: 2 }');
    // The slowloris: 30 connections each sending one header byte now and then. Under
    // Node's defaults they stayed open; now the server hangs up on every one of them.
    const clients = await Promise.all(Array.from({ length: 30 }, () => connect(server.url)));
    const drip = setInterval(() => {
      for (const { socket } of clients) if (!socket.destroyed) socket.write('X');
    }, 200);
    for (const { socket } of clients) socket.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ');
    try {
      const answers = await Promise.all(clients.map((c) => c.closed));
      // Node answers 408 before hanging up, or just closes; never a 200 for the slow request.
      for (const answer of answers) expect(answer).not.toContain('200 OK');
    } finally {
      clearInterval(drip);
    }
    // The server is still there for everyone else.
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
  });

  it('cuts off a client that sends its body too slowly', async () => {
    await start('{ headersTimeoutSeconds: 1, requestTimeoutSeconds: 1 }');
    const { socket, closed } = await connect(server.url);
    // The login form reads its body: an unauthenticated client dribbling one is cut off.
    socket.write(
      'POST /login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\ntoken=',
    );
    const drip = setInterval(() => !socket.destroyed && socket.write('x'), 200);
    try {
      expect(await closed).not.toContain('200 OK');
    } finally {
      clearInterval(drip);
    }
  });

  it('closes connections beyond the cap at once, and serves again when others leave', async () => {
    await start('{ maxConnections: 5, headersTimeoutSeconds: 60, requestTimeoutSeconds: 60 }');
    const held = await Promise.all(Array.from({ length: 5 }, () => connect(server.url)));
    const extra = await connect(server.url);
    // The sixth is closed by the server without an answer; the five stay open.
    expect(await extra.closed).toBe('');
    expect(held.every(({ socket }) => !socket.destroyed)).toBe(true);
    for (const { socket } of held) socket.destroy();
    await until(
      async () => (await fetch(`${server.url}/health`).catch(() => null))?.status === 200,
      'the server to take connections again',
    );
  });

  it('bounds the body of every route that reads one, after the credential check', async () => {
    await start('{ maxBodyBytes: 2048 }');
    const big = 'x'.repeat(4096);
    // Without a token the size does not matter: nothing is read.
    expect((await fetch(`${server.url}/api/queue/pause`, { method: 'POST', body: big })).status).toBe(401);
    const pause = await fetch(`${server.url}/api/queue/pause`, { method: 'POST', body: big, headers: bearer() });
    expect(pause.status).toBe(413);
    expect(await pause.json()).toEqual({ error: { code: 'too_large', message: 'body is larger than the limit of 2048 bytes' } });
    expect(
      (await fetch(`${server.url}/api/queue/stats`, { headers: bearer() }).then((r) => r.json())) as { paused: boolean },
    ).toMatchObject({
      paused: false,
    });
    expect((await fetch(`${server.url}/logout`, { method: 'POST', body: big })).status).toBe(413);
    expect((await fetch(`${server.url}/api/queue/pause`, { method: 'POST', body: 'small', headers: bearer() })).status).toBe(200);
  });
});
