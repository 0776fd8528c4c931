import fs from 'node:fs';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  batonPathsFor,
  createEgressGate,
  parseAllowRule,
  runAllowList,
  type EgressGate,
  type EgressRefusal,
} from '../../src/egress/index.js';

/** A request through the gate's unix socket, as a proxy client sends it (absolute URI). */
function viaGate(socketPath: string, url: string, method = 'GET'): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath, method, path: url, headers: { host: new URL(url).host } }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** A CONNECT tunnel through the gate: the status line, and what the far end echoes back. */
function tunnel(socketPath: string, authority: string): Promise<{ status: number; body: string; echoed?: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(socketPath);
    let text = '';
    socket.on('error', reject);
    socket.once('connect', () => socket.write(`CONNECT ${authority} HTTP/1.1\r\nhost: ${authority}\r\n\r\n`));
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const end = text.indexOf('\r\n\r\n');
      if (end < 0) return;
      const status = Number(text.split(' ')[1]);
      if (status === 200) {
        if (text.slice(end + 4).includes('pong')) {
          socket.destroy();
          resolve({ status, body: '', echoed: 'pong' });
        } else if (!text.includes('ping-sent')) {
          text += 'ping-sent';
          socket.write('ping');
        }
      }
    });
    socket.on('end', () => {
      const end = text.indexOf('\r\n\r\n');
      resolve({ status: Number(text.split(' ')[1]), body: text.slice(end + 4) });
    });
  });
}

describe('the egress gate', () => {
  let dir: string;
  let echo: net.Server;
  let echoPort: number;
  let web: http.Server;
  let webPort: number;
  let baton: http.Server;
  let batonPort: number;
  const batonSeen: string[] = [];
  const refused: EgressRefusal[] = [];
  let gate: EgressGate;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-egress-'));
    echo = net.createServer((s) => s.on('data', (d: Buffer) => s.write(d.toString() === 'ping' ? 'pong' : d)));
    await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
    echoPort = (echo.address() as AddressInfo).port;
    web = http.createServer((req, res) => res.end(`web saw ${req.headers.host} ${req.url}`));
    await new Promise<void>((r) => web.listen(0, '127.0.0.1', r));
    webPort = (web.address() as AddressInfo).port;
    baton = http.createServer((req, res) => {
      batonSeen.push(`${req.method} ${req.url}`);
      res.end('baton answered');
    });
    await new Promise<void>((r) => baton.listen(0, '127.0.0.1', r));
    batonPort = (baton.address() as AddressInfo).port;
    const names: Record<string, string[]> = {
      'public.example': ['93.184.215.14'],
      'rebind.example': ['93.184.215.14', '127.0.0.1'],
      'metadata.example': ['169.254.169.254'],
      'forge.test': ['127.0.0.1'],
    };
    gate = await createEgressGate({
      socketPath: path.join(dir, 'egress.sock'),
      rules: [
        parseAllowRule(`127.0.0.1:${echoPort}`, true)!,
        parseAllowRule(`forge.test:${webPort}`, true)!,
        parseAllowRule(`127.0.0.1:${batonPort}`, true)!,
        parseAllowRule('*.example', true)!,
      ],
      baton: { origin: `http://127.0.0.1:${batonPort}`, allowPath: batonPathsFor(7) },
      deny: [{ host: '127.0.0.1', port: batonPort }],
      lookup: async (host) => {
        const found = names[host];
        if (!found) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
        return found.map((address) => ({ address, family: 4 }));
      },
      onRefused: (r) => refused.push(r),
    });
  });

  afterAll(async () => {
    await gate?.close();
    for (const s of [echo, web, baton]) await new Promise((r) => s?.close(r));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('tunnels to a host of the allow-list', async () => {
    expect(await tunnel(gate.socketPath, `127.0.0.1:${echoPort}`)).toMatchObject({ status: 200, echoed: 'pong' });
  });

  it('refuses a host that is not on the list, saying why and how to widen it', async () => {
    const answer = await tunnel(gate.socketPath, 'evil.invalid:443');
    expect(answer.status).toBe(403);
    expect(answer.body).toContain("refused CONNECT evil.invalid:443: not on this run's allow-list");
    expect(answer.body).toContain('egress.allow');
    expect(refused.at(-1)).toMatchObject({ method: 'CONNECT', host: 'evil.invalid', port: 443 });
  });

  it('refuses another port of an allowed host', async () => {
    expect((await tunnel(gate.socketPath, `127.0.0.1:${echoPort + 1}`)).status).toBe(403);
  });

  it('refuses a wildcard name that resolves to a private address, even among public ones (DNS rebinding)', async () => {
    const rebind = await tunnel(gate.socketPath, 'rebind.example:443');
    expect(rebind.status).toBe(403);
    expect(rebind.body).toContain('resolves to 127.0.0.1 (loopback)');
    const metadata = await viaGate(gate.socketPath, 'http://metadata.example/latest/meta-data/');
    expect(metadata.status).toBe(403);
    expect(metadata.body).toContain('169.254.169.254 (link-local)');
  });

  it('forwards plain http to an allowed host, to the address it checked', async () => {
    const answer = await viaGate(gate.socketPath, `http://forge.test:${webPort}/acme/app.git/info/refs?service=git-upload-pack`);
    expect(answer).toEqual({ status: 200, body: `web saw forge.test:${webPort} /acme/app.git/info/refs?service=git-upload-pack` });
  });

  it("reaches baton only as baton.internal, and only the run's own callbacks and the gateway", async () => {
    expect(await viaGate(gate.socketPath, 'http://baton.internal/api/runs/7/complete', 'POST')).toEqual({
      status: 200,
      body: 'baton answered',
    });
    expect((await viaGate(gate.socketPath, 'http://baton.internal/gateway/api/v1/repos/acme/app')).status).toBe(200);
    for (const p of ['/api/runs/8/complete', '/api/tokens', '/gateway/../api/tokens', '/api/runs/7/complete/../../../tokens', '/']) {
      const answer = await viaGate(gate.socketPath, `http://baton.internal${p}`, 'POST');
      expect(answer.status, p).toBe(403);
    }
    expect(batonSeen).toEqual(['POST /api/runs/7/complete', 'GET /gateway/api/v1/repos/acme/app']);
    // Baton's own port is refused directly even where a rule would allow it.
    const direct = await tunnel(gate.socketPath, `127.0.0.1:${batonPort}`);
    expect(direct.status).toBe(403);
    expect(direct.body).toContain("baton's own service");
    expect((await viaGate(gate.socketPath, `http://127.0.0.1:${batonPort}/api/tokens`)).status).toBe(403);
  });

  it('answers malformed requests with 400, and keeps serving', async () => {
    expect((await tunnel(gate.socketPath, 'no-port')).status).toBe(400);
    expect((await tunnel(gate.socketPath, `127.0.0.1:${echoPort}`)).status).toBe(200);
  });
});

describe("a run's allow-list", () => {
  const settings = {
    gate: 'on' as const,
    agentHosts: ['api.anthropic.com'],
    allow: ['registry.npmjs.org'],
    stages: { develop: ['*.pypi.org'] },
  };

  it("never holds baton's own origin: a Gitea run's forge and clone URLs are the gateway's, so the forge is not on its list", () => {
    const baton = 'http://10.0.0.9:8080';
    const rules = runAllowList({
      stage: 'develop',
      forgeUrl: `${baton}/gateway`,
      cloneUrl: `${baton}/gateway/acme/app.git`,
      batonUrl: `${baton}/api/runs/7/complete`,
      settings,
    });
    expect(rules.map((r) => r.host)).toEqual(['api.anthropic.com', 'registry.npmjs.org', 'pypi.org']);
    // A GitHub run reaches GitHub directly: its web origin, its clone origin (once) and its API.
    const github = runAllowList({
      stage: 'review',
      forgeUrl: 'https://github.com',
      cloneUrl: 'https://github.com/acme/app.git',
      forgeUrls: ['https://api.github.com'],
      batonUrl: `${baton}/api/runs/8/complete`,
      settings,
    });
    expect(github.map((r) => `${r.host}:${r.port ?? ''}`)).toEqual([
      'api.anthropic.com:',
      'github.com:443',
      'api.github.com:443',
      'registry.npmjs.org:',
    ]);
  });

  it('holds the agent hosts, the forge origins, the operator hosts and the stage hosts', () => {
    const rules = runAllowList({ stage: 'develop', forgeUrl: 'http://10.0.0.5:3000', cloneUrl: 'https://git.example.com/', settings });
    expect(rules).toEqual([
      { host: 'api.anthropic.com', wildcard: false, private: false },
      { host: '10.0.0.5', wildcard: false, port: 3000, private: true },
      { host: 'git.example.com', wildcard: false, port: 443, private: true },
      { host: 'registry.npmjs.org', wildcard: false, private: true },
      { host: 'pypi.org', wildcard: true, private: false },
    ]);
    expect(runAllowList({ stage: 'review', settings }).map((r) => r.host)).toEqual(['api.anthropic.com', 'registry.npmjs.org']);
  });

  it('refuses patterns that are not hosts', () => {
    for (const bad of ['http://x', 'a b', '*.1.2.3.4', 'host:0', 'host:70000', '*']) expect(parseAllowRule(bad, true), bad).toBeNull();
  });
});

describe('an egress gate deep in a data directory', () => {
  it('listens at a socket path longer than a unix address holds, and tunnels through it', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-egress-long-'));
    const deep = path.join(dir, 'data', 'sandbox-checks', 'd25c3799-4048-4aaa-8f44-f30927742a69', 'x'.repeat(40), 'egress');
    fs.mkdirSync(deep, { recursive: true });
    const socketPath = path.join(deep, 'egress.sock');
    expect(Buffer.byteLength(socketPath)).toBeGreaterThan(107);
    const echo = net.createServer((s) => s.on('data', () => s.write('pong')));
    await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
    const echoPort = (echo.address() as AddressInfo).port;
    const gate = await createEgressGate({ socketPath, rules: [parseAllowRule(`127.0.0.1:${echoPort}`, true)!] });
    try {
      // The socket is where the run's sandbox binds it from; a run reaches it by a short path.
      expect(fs.statSync(socketPath).isSocket()).toBe(true);
      const short = path.join(dir, 'gate');
      fs.symlinkSync(deep, short);
      expect(await tunnel(path.join(short, 'egress.sock'), `127.0.0.1:${echoPort}`)).toMatchObject({ status: 200, echoed: 'pong' });
    } finally {
      await gate.close();
      await new Promise((r) => echo.close(r));
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
