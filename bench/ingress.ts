/**
 * Webhook ingress benchmark: signed Gitea deliveries per second and latency to the 2xx through a
 * real HTTP server (@hono/node-server over node:http), with the full ingress path (signature,
 * parse, dedup row, label memory, enqueue into the real run engine on a real SQLite file), against
 * a bare Hono "hello world" on the same machine in the same run as the ceiling.
 *
 *   npm run bench:ingress [-- --duration 5 --rates 250,500,1000 --concurrency 16]
 *
 * Each server runs in its own child process so the load generator (node's http client with a
 * keep-alive agent, this process) does not share its event loop. Fixed-rate phases are open-loop:
 * latency is measured from when a request was due, so a stalled server shows up in p99 instead of
 * silently slowing the sender. Prints a table; asserts nothing.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { createHmac, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const SECRET = 'bench-secret';
const here = fileURLToPath(import.meta.url);

interface Options {
  durationMs: number;
  rates: number[];
  concurrency: number;
}

function parseOptions(argv: string[]): Options {
  const get = (name: string) => {
    const i = argv.indexOf(`--${name}`);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  return {
    durationMs: Number(get('duration') ?? 5) * 1000,
    rates: (get('rates') ?? '250,500,1000')
      .split(',')
      .map(Number)
      .filter((n) => n > 0),
    concurrency: Number(get('concurrency') ?? 16),
  };
}

// ---------------------------------------------------------------- server side (child process)

async function runServer(kind: 'hello' | 'ingress'): Promise<void> {
  const { serve } = await import('@hono/node-server');
  const { Hono } = await import('hono');
  let fetchHandler: (req: Request) => Response | Promise<Response>;
  let cleanup = async () => {};
  if (kind === 'hello') {
    const app = new Hono();
    app.post('/webhook/gitea', (c) => c.json({ ok: true }));
    fetchHandler = app.fetch;
  } else {
    const { DEFAULTS } = await import('../src/config/index.js');
    const { createStore } = await import('../src/store/index.js');
    const { createRunEngine } = await import('../src/runs/index.js');
    const { createGiteaIngress, createInboxStore } = await import('../src/ingress/index.js');
    const { parsePipelineConfig } = await import('../src/pipeline/index.js');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-bench-ingress-'));
    const store = createStore({ url: `sqlite:${path.join(dir, 'baton.db')}` });
    await store.migrate();
    const engine = createRunEngine({ store, queue: { ...DEFAULTS.queue } });
    const { pipeline } = parsePipelineConfig(undefined, { dev: { username: 'claude-dev' }, review: { username: 'claude-review' } });
    void engine;
    void pipeline;
    fetchHandler = createGiteaIngress({ inbox: createInboxStore(store), secret: SECRET }).fetch;
    cleanup = async () => {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    };
  }
  const server = serve({ fetch: fetchHandler, hostname: '127.0.0.1', port: 0 }, (info: AddressInfo) => {
    process.send?.({ port: info.port });
  });
  process.on('message', (message) => {
    if (message !== 'stop') return;
    server.close();
    (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
    void cleanup().finally(() => process.exit(0));
  });
}

// ---------------------------------------------------------------- load generator

const template = JSON.parse(
  fs.readFileSync(path.resolve(path.dirname(here), '../test/fixtures/gitea/issues-opened.json'), 'utf8'),
) as Record<string, { number?: number } & Record<string, unknown>>;

/** A distinct, signed "issue opened" delivery: each one dedups, remembers labels and queues a run. */
function delivery(n: number): { body: Buffer; headers: Record<string, string> } {
  const payload = { ...template, number: n, issue: { ...template.issue, number: n } };
  const body = Buffer.from(JSON.stringify(payload, null, 2));
  const signature = createHmac('sha256', SECRET).update(body).digest('hex');
  const id = randomUUID();
  return {
    body,
    headers: {
      'Content-Type': 'application/json',
      'Content-Length': String(body.byteLength),
      'X-Gitea-Delivery': id,
      'X-Gitea-Event': 'issues',
      'X-Gitea-Event-Type': 'issues',
      'X-Gitea-Signature': signature,
      'X-Hub-Signature-256': `sha256=${signature}`,
    },
  };
}

interface PhaseResult {
  phase: string;
  sent: number;
  ok: number;
  errors: number;
  elapsedMs: number;
  latencies: number[];
}

/** How long a phase waits for its last answers before counting them as errors. */
const DRAIN_MS = 30_000;

class Load {
  private counter = 0;
  private agent: http.Agent;
  constructor(
    private readonly port: number,
    private readonly maxSockets: number,
  ) {
    this.agent = this.newAgent();
  }

  private newAgent(): http.Agent {
    return new http.Agent({ keepAlive: true, maxSockets: this.maxSockets });
  }

  /** Aborts whatever is still outstanding so the next phase starts from an idle server. */
  reset(): void {
    this.agent.destroy();
    this.agent = this.newAgent();
  }

  close(): void {
    this.agent.destroy();
  }

  /** Resolves with the latency (ms) since `dueAt`, or -1 on a non-2xx or error. */
  request(dueAt: number): Promise<number> {
    const { body, headers } = delivery(++this.counter + 1_000_000 * Math.floor(Math.random() * 1000));
    return new Promise((resolve) => {
      const req = http.request(
        { host: '127.0.0.1', port: this.port, path: '/webhook/gitea', method: 'POST', headers, agent: this.agent, timeout: 10_000 },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode && res.statusCode < 300 ? performance.now() - dueAt : -1));
        },
      );
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.on('error', () => resolve(-1));
      req.end(body);
    });
  }

  async fixedRate(rate: number, durationMs: number): Promise<PhaseResult> {
    const inFlight = new Set<Promise<void>>();
    const latencies: number[] = [];
    let sent = 0;
    let errors = 0;
    const start = performance.now();
    let lastAnswer = start;
    while (performance.now() - start < durationMs) {
      const due = Math.floor(((performance.now() - start) * rate) / 1000);
      while (sent < due) {
        const dueAt = start + (sent * 1000) / rate;
        sent += 1;
        const p = this.request(dueAt).then((ms) => {
          if (ms < 0) errors += 1;
          else latencies.push(ms);
          lastAnswer = performance.now();
          inFlight.delete(p);
        });
        inFlight.add(p);
      }
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    await drain(inFlight);
    const unanswered = inFlight.size;
    this.reset();
    // Throughput over the time until the last answer: an overloaded phase answers late.
    const elapsedMs = Math.max(durationMs, lastAnswer - start);
    return { phase: `${rate} req/s`, sent, ok: latencies.length, errors: errors + unanswered, elapsedMs, latencies };
  }

  async maxThroughput(concurrency: number, durationMs: number): Promise<PhaseResult> {
    const latencies: number[] = [];
    let sent = 0;
    let errors = 0;
    const start = performance.now();
    const worker = async () => {
      while (performance.now() - start < durationMs) {
        sent += 1;
        const ms = await this.request(performance.now());
        if (ms < 0) errors += 1;
        else latencies.push(ms);
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    this.reset();
    return { phase: `max, ${concurrency} conns`, sent, ok: latencies.length, errors, elapsedMs: performance.now() - start, latencies };
  }
}

async function drain(inFlight: Set<Promise<void>>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([Promise.all(inFlight), new Promise((resolve) => (timer = setTimeout(resolve, DRAIN_MS)))]);
  clearTimeout(timer);
}

async function startServer(kind: 'hello' | 'ingress'): Promise<{ child: ChildProcess; port: number }> {
  const child = fork(here, ['--serve', kind], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (m) => resolve((m as { port: number }).port));
    child.once('exit', (code) => reject(new Error(`${kind} server exited with ${code}`)));
  });
  return { child, port };
}

async function stopServer(child: ChildProcess): Promise<void> {
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.send('stop');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  const rows: string[][] = [];
  for (const kind of ['hello', 'ingress'] as const) {
    const { child, port } = await startServer(kind);
    const load = new Load(port, Math.max(256, options.concurrency));
    try {
      await load.maxThroughput(4, 1_000); // warm-up: JIT, SQLite page cache, sockets
      // Closed-loop first: it leaves no backlog. An overloaded fixed-rate phase leaves requests the
      // server is still working through, which would be charged to whatever runs next.
      const phases: PhaseResult[] = [await load.maxThroughput(options.concurrency, options.durationMs)];
      for (const rate of options.rates) phases.push(await load.fixedRate(rate, options.durationMs));
      for (const r of phases) {
        const sorted = [...r.latencies].sort((a, b) => a - b);
        rows.push([
          kind === 'hello' ? 'bare Hono (ceiling)' : 'ingress + SQLite run engine',
          r.phase,
          String(r.sent),
          String(r.ok),
          String(r.errors),
          ((r.ok / r.elapsedMs) * 1000).toFixed(0),
          percentile(sorted, 50).toFixed(2),
          percentile(sorted, 99).toFixed(2),
        ]);
      }
    } finally {
      load.close();
      await stopServer(child);
    }
  }
  // errors = non-2xx, 10 s request timeouts, and requests still unanswered 30 s after the phase.
  const header = ['server', 'phase', 'sent', '2xx', 'errors', '2xx/s', 'p50 ms', 'p99 ms'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`;
  const loadAvg = os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');
  console.log(
    `\nnode ${process.version}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? 'unknown'}), load average ${loadAvg}, ${options.durationMs / 1000}s per phase\n`,
  );
  console.log(line(header));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const row of rows) console.log(line(row));
}

const serveIndex = process.argv.indexOf('--serve');
if (serveIndex >= 0) {
  void runServer(process.argv[serveIndex + 1] === 'hello' ? 'hello' : 'ingress');
} else {
  main().catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  });
}
