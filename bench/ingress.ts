/**
 * Webhook ingress benchmark: signed Gitea deliveries per second and latency to the 202 through a
 * real HTTP server (@hono/node-server over node:http), with baton's accept path (size limit,
 * signature, parse, one insert into the inbox on a real SQLite file) while the inbox worker in the
 * same process routes, asks a stub forge for the sender's permission and enqueues into the real
 * run engine, against a bare Hono "hello world" on the same machine in the same run as the
 * ceiling; then the accept path again while every forge API call fails (503), to show accept
 * latency does not depend on the forge.
 *
 *   npm run bench:ingress [-- --duration 5 --rates 250,500,1000 --concurrency 16 --cpu-prof DIR
 *                            --servers hello,ingress,ingress-forge-down,accept-only --busy-runners 2]
 *
 * `--busy-runners N` adds, for the accept path with its worker, a 500 req/s phase beside N
 * processes that spin the CPU as busy agents and builds do: started at baton's own priority (the
 * peer: runners that do not yield), then the way local runs start (`local.runnerNice`'s default,
 * nice 10 with best-effort I/O 7, the same prefix the local provider uses).
 *
 * Each server runs in its own child process so the load generator (node's http client with a
 * keep-alive agent, this process) does not share its event loop. Fixed-rate phases are open-loop:
 * latency is measured from when a request was due, so a stalled server shows up in p99 instead of
 * silently slowing the sender. Prints a table; asserts nothing.
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
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
  /** Where each server child writes a V8 CPU profile (node --cpu-prof), or undefined for none. */
  cpuProfDir?: string;
  servers: ServerKind[];
  /** Busy runners beside the accept path in extra phases (0: none). */
  busyRunners: number;
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
    cpuProfDir: get('cpu-prof'),
    busyRunners: Number(get('busy-runners') ?? 0),
    servers: (get('servers') ?? 'hello,ingress,ingress-forge-down').split(',').map((name) => {
      if (!(SERVER_KINDS as readonly string[]).includes(name)) throw new Error(`--servers takes ${SERVER_KINDS.join(', ')}; got "${name}"`);
      return name as ServerKind;
    }),
  };
}

// ---------------------------------------------------------------- server side (child process)

/** `accept-only` (not run by default, `--servers`): the accept path with no inbox worker, to split the cost. */
const SERVER_KINDS = ['hello', 'ingress', 'ingress-forge-down', 'accept-only'] as const;
type ServerKind = (typeof SERVER_KINDS)[number];

async function runServer(kind: ServerKind): Promise<void> {
  const { serve } = await import('@hono/node-server');
  const { Hono } = await import('hono');
  let fetchHandler: (req: Request) => Response | Promise<Response>;
  let cleanup = async () => {};
  let processedSoFar = async () => 0;
  if (kind === 'hello') {
    const app = new Hono();
    app.post('/webhook/gitea', (c) => c.json({ ok: true }));
    fetchHandler = app.fetch;
  } else {
    const { DEFAULTS } = await import('../src/runs/index.js');
    const { createStore } = await import('../src/store/index.js');
    const { createRunEngine } = await import('../src/runs/index.js');
    const { createGiteaIngress, createInboxProcessing, parseWebhooksConfig } = await import('../src/ingress/index.js');
    const { createGiteaClient } = await import('../src/forge/index.js');
    const { parsePipelineConfig } = await import('../src/pipeline/index.js');
    const { createLogger } = await import('../src/log/index.js');
    const { default: pino } = await import('pino');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-bench-ingress-'));
    const store = createStore({ url: `sqlite:${path.join(dir, 'baton.db')}` });
    await store.migrate();
    const engine = createRunEngine({ store, queue: { ...DEFAULTS.queue } });
    const { pipeline } = parsePipelineConfig(undefined, { dev: { username: 'claude-dev' }, review: { username: 'claude-review' } });
    // A stub forge answering the permission endpoint, or failing every call with 503. In a process
    // of its own: the forge's work is not baton's, and it must not share the server's CPU time.
    const forge = await startForgeStub(kind === 'ingress-forge-down');
    const forgeUrl = forge.url;
    const client = createGiteaClient({ baseUrl: forgeUrl, token: 'bench-token', timeoutMs: 2_000 });
    const { webhooks } = parseWebhooksConfig({ requireWritePermission: true, permissionCacheSeconds: 0, retryMaxSeconds: 5 });
    // baton's own logger at its default level, writing synchronously as it does to stdout: a line
    // per accepted delivery and one per verdict are part of the cost.
    const logger = createLogger({ level: 'info', destination: pino.destination({ dest: path.join(dir, 'baton.log'), sync: true }) });
    const processing = createInboxProcessing({
      store,
      engine,
      pipeline,
      webhooks,
      permissionOf: (owner, repo, user) => client.getUserPermission(owner, repo, user),
      logger,
    });
    if (kind !== 'accept-only') await processing.worker.start();
    fetchHandler = createGiteaIngress({ inbox: processing.inbox, secret: SECRET, logger }).fetch;
    processedSoFar = async () => (await processing.inbox.counts()).processed;
    cleanup = async () => {
      const counts = await processing.inbox.counts();
      process.send?.({ counts });
      await processing.worker.stop();
      forge.stop();
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    };
  }
  const server = serve({ fetch: fetchHandler, hostname: '127.0.0.1', port: 0 }, (info: AddressInfo) => {
    process.send?.({ port: info.port });
  });
  process.on('message', (message) => {
    // CPU time used so far (µs, user + system): the parent charges each phase with its difference.
    if (message === 'cpu') {
      const { user, system } = process.cpuUsage();
      process.send?.({ cpuMicros: user + system });
      return;
    }
    if (message === 'processed') {
      void processedSoFar().then((processed) => process.send?.({ processed }));
      return;
    }
    if (message !== 'stop') return;
    server.close();
    (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
    void cleanup().finally(() => process.exit(0));
  });
}

/** The stub forge's program: plain node, so it starts at once; it ends with its parent's pipe. */
const FORGE_STUB = `
const down = process.argv[1] === 'down';
const server = require('node:http').createServer((req, res) => {
  req.resume();
  res.writeHead(down ? 503 : 200, { 'content-type': 'application/json' });
  res.end(down ? '{"message":"unavailable"}' : '{"permission":"write","role_name":"write"}');
});
server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\\n'));
process.stdin.on('end', () => process.exit(0)).resume();
`;

async function startForgeStub(down: boolean): Promise<{ url: string; stop(): void }> {
  const child = spawn(process.execPath, ['-e', FORGE_STUB, down ? 'down' : 'up'], { stdio: ['pipe', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim())));
    child.once('exit', (code) => reject(new Error(`the stub forge exited with ${code}`)));
  });
  return { url: `http://127.0.0.1:${port}`, stop: () => child.kill() };
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
  /** The server process's CPU time during the phase (µs), with whatever its worker did meanwhile. */
  cpuMicros?: number;
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

async function startServer(kind: ServerKind, cpuProfDir?: string): Promise<{ child: ChildProcess; port: number }> {
  const execArgv = cpuProfDir
    ? // One directory per server: tsx's loader thread writes a profile of its own beside the main one.
      [...process.execArgv, '--cpu-prof', '--cpu-prof-dir', path.join(cpuProfDir, kind)]
    : process.execArgv;
  const child = fork(here, ['--serve', kind], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], execArgv });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (m) => resolve((m as { port: number }).port));
    child.on('message', (m) => {
      const counts = (m as { counts?: Record<string, number> }).counts;
      if (counts) console.error(`${kind}: inbox at stop: ${JSON.stringify(counts)}`);
    });
    child.once('exit', (code) => reject(new Error(`${kind} server exited with ${code}`)));
  });
  return { child, port };
}

/** Asks the server child `question` and resolves with the number it answers under `key`. */
function askServer(child: ChildProcess, question: 'cpu' | 'processed', key: 'cpuMicros' | 'processed'): Promise<number> {
  return new Promise((resolve) => {
    const onMessage = (m: unknown) => {
      const value = (m as Record<string, number | undefined>)[key];
      if (value === undefined) return;
      child.off('message', onMessage);
      resolve(value);
    };
    child.on('message', onMessage);
    child.send(question);
  });
}

/** The server's CPU time so far (µs). Less sensitive to a busy machine than rates and latencies. */
const serverCpu = (child: ChildProcess) => askServer(child, 'cpu', 'cpuMicros');

/**
 * The inbox worker on its own: no requests for `durationMs`, the deliveries it processed meanwhile
 * (from the backlog the phases before left). `2xx` counts processed deliveries here.
 */
async function drainPhase(child: ChildProcess, durationMs: number): Promise<PhaseResult> {
  const before = await askServer(child, 'processed', 'processed');
  const start = performance.now();
  await new Promise((resolve) => setTimeout(resolve, durationMs));
  const processed = (await askServer(child, 'processed', 'processed')) - before;
  return { phase: 'backlog, no requests', sent: 0, ok: processed, errors: 0, elapsedMs: performance.now() - start, latencies: [] };
}

/** local.runnerNice's default. */
const RUNNER_NICE = 10;

/** `count` processes spinning the CPU, started with the local provider's priority prefix for `nice`; resolved once each runs. */
async function startBusyRunners(count: number, nice: number): Promise<ChildProcess[]> {
  const { priorityPrefix } = await import('../src/workspaces/local/launch.js');
  const [file = process.execPath, ...args] = [...priorityPrefix(nice), process.execPath, '-e', 'for (;;) {}'];
  return Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<ChildProcess>((resolve, reject) => {
          const child = spawn(file, args, { stdio: 'ignore' });
          child.once('spawn', () => resolve(child));
          child.once('error', reject);
        }),
    ),
  );
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
  const labels: Record<ServerKind, string> = {
    hello: 'bare Hono (ceiling)',
    ingress: 'accept + inbox worker',
    'ingress-forge-down': 'accept, forge API down',
    'accept-only': 'accept, no inbox worker',
  };
  const max: Partial<Record<ServerKind, number>> = {};
  const p99At1000: Partial<Record<ServerKind, number>> = {};
  const busyP99: Record<number, number> = {};
  for (const kind of options.servers) {
    const { child, port } = await startServer(kind, options.cpuProfDir);
    const load = new Load(port, Math.max(256, options.concurrency));
    try {
      await load.maxThroughput(4, 1_000); // warm-up: JIT, SQLite page cache, sockets
      // Closed-loop first: it leaves no backlog. An overloaded fixed-rate phase leaves requests the
      // server is still working through, which would be charged to whatever runs next.
      const phases: PhaseResult[] = [];
      const measured = async (run: () => Promise<PhaseResult>) => {
        const before = await serverCpu(child);
        const result = await run();
        phases.push({ ...result, cpuMicros: (await serverCpu(child)) - before });
      };
      if (kind !== 'ingress-forge-down') await measured(() => load.maxThroughput(options.concurrency, options.durationMs));
      const rates = kind === 'ingress-forge-down' ? [1000] : options.rates;
      for (const rate of rates) await measured(() => load.fixedRate(rate, options.durationMs));
      // How fast the backlog goes once the requests stop (the worker steps aside while they come).
      if (kind === 'ingress') await measured(() => drainPhase(child, options.durationMs));
      if (kind === 'ingress' && options.busyRunners > 0) {
        for (const nice of [0, RUNNER_NICE]) {
          const runners = await startBusyRunners(options.busyRunners, nice);
          try {
            const label = `500 req/s, ${options.busyRunners} busy runners at nice ${nice}`;
            await measured(async () => ({ ...(await load.fixedRate(500, options.durationMs)), phase: label }));
            busyP99[nice] = percentile(
              [...phases.at(-1)!.latencies].sort((a, b) => a - b),
              99,
            );
          } finally {
            for (const runner of runners) runner.kill('SIGKILL');
          }
          // Whatever the phase left unprocessed goes before the next one starts.
          await drainPhase(child, options.durationMs);
        }
      }
      for (const r of phases) {
        const sorted = [...r.latencies].sort((a, b) => a - b);
        if (r.phase.startsWith('max')) max[kind] = (r.ok / r.elapsedMs) * 1000;
        if (r.phase === '1000 req/s') p99At1000[kind] = percentile(sorted, 99);
        rows.push([
          labels[kind],
          r.phase,
          String(r.sent),
          String(r.ok),
          String(r.errors),
          ((r.ok / r.elapsedMs) * 1000).toFixed(0),
          sorted.length > 0 ? percentile(sorted, 50).toFixed(2) : '-',
          sorted.length > 0 ? percentile(sorted, 99).toFixed(2) : '-',
          r.cpuMicros === undefined || r.ok === 0 ? '?' : (r.cpuMicros / r.ok).toFixed(0),
          r.cpuMicros === undefined ? '?' : ((r.cpuMicros / 1000 / r.elapsedMs) * 100).toFixed(0),
        ]);
      }
    } finally {
      load.close();
      await stopServer(child);
    }
  }
  // errors = non-2xx, 10 s request timeouts, and requests still unanswered 30 s after the phase.
  // "backlog, no requests": 2xx = deliveries the worker processed, CPU per processed delivery.
  // server CPU: the server process's CPU time over the phase, per 2xx and as a share of one core
  // (the inbox worker's work included, which may trail the phase it was accepted in).
  const header = ['server', 'phase', 'sent', '2xx', 'errors', '2xx/s', 'p50 ms', 'p99 ms', 'CPU µs/2xx', 'CPU %'];
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
  const ratio = max.hello && max.ingress ? ((max.ingress / max.hello) * 100).toFixed(0) : '?';
  console.log(
    `\naccept throughput: ${ratio}% of bare Hono; p99 at 1,000 req/s: ${p99At1000.ingress?.toFixed(2) ?? '?'} ms ` +
      `(forge API down: ${p99At1000['ingress-forge-down']?.toFixed(2) ?? '?'} ms, bare Hono ${p99At1000.hello?.toFixed(2) ?? '?'} ms)`,
  );
  if (options.busyRunners > 0)
    console.log(
      `p99 at 500 req/s beside ${options.busyRunners} busy runners: ${busyP99[RUNNER_NICE]?.toFixed(2) ?? '?'} ms at nice ${RUNNER_NICE} ` +
        `(baton's default), ${busyP99[0]?.toFixed(2) ?? '?'} ms at baton's own priority`,
    );
}

const serveIndex = process.argv.indexOf('--serve');
if (serveIndex >= 0) {
  void runServer(process.argv[serveIndex + 1] as ServerKind);
} else {
  main().catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  });
}
