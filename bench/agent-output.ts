/**
 * `npm run bench:agent-output`: how fast the runner reads an agent's stream-json output, in
 * messages per second at 5k, 20k and 80k messages, next to the floor of reading NDJSON in Node
 * (`readline` + `JSON.parse`), measured in the same run on the same messages (before the fix
 * parsing was quadratic: 5k messages 0.33 s, 10k 1.27 s, 20k 5.8 s, 40k 28 s).
 *
 *   npm run bench:agent-output [-- --sizes 5000,20000,80000 --repeat 3]
 *
 * Two levels, each with its floor:
 * - in process: the runner's line splitter and stream-json parser (with the per-line token count
 *   the token cap reads) against readline + JSON.parse over the same chunks;
 * - whole runner: `runAgent` with an agent that prints a prepared NDJSON file (`cat`), from the
 *   agent's start to its exit, including the raw and readable logs, secret masking and the
 *   progress batches to a local HTTP sink, against `cat` read with readline + JSON.parse by a parent.
 * Prints a table (the best of `--repeat` runs per cell); asserts nothing.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import readline from 'node:readline';
import { Readable } from 'node:stream';
import { createLineSplitter, runAgent } from '../src/agent/index.js';
import { createStreamParser } from '../src/agents/index.js';

interface Options {
  sizes: number[];
  repeat: number;
}

function parseOptions(argv: string[]): Options {
  const get = (name: string) => {
    const i = argv.indexOf(`--${name}`);
    return i >= 0 ? argv[i + 1] : argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
  };
  return {
    sizes: (get('sizes') ?? '5000,20000,80000')
      .split(',')
      .map(Number)
      .filter((n) => Number.isInteger(n) && n > 0),
    repeat: Math.max(1, Number(get('repeat') ?? 3)),
  };
}

/** A session shaped like a real one: per turn an assistant text, a tool call, its result. */
function sessionLines(messages: number): string[] {
  const usage = { input_tokens: 1200, output_tokens: 80, cache_read_input_tokens: 30_000, cache_creation_input_tokens: 400 };
  const lines = [JSON.stringify({ type: 'system', subtype: 'init', session_id: 's', model: 'claude-bench', cwd: '/w', tools: ['Bash'] })];
  for (let i = 0; lines.length < messages - 1; i++) {
    const id = `msg_${i}`;
    lines.push(
      JSON.stringify({
        type: 'assistant',
        message: {
          id,
          role: 'assistant',
          content: [{ type: 'text', text: `Step ${i}: looking at the failing test and the code it covers.` }],
          usage,
        },
        session_id: 's',
      }),
    );
    lines.push(
      JSON.stringify({
        type: 'assistant',
        message: {
          id,
          role: 'assistant',
          content: [{ type: 'tool_use', id: `t${i}`, name: 'Bash', input: { command: `npm test -- --grep case-${i}` } }],
          usage,
        },
        session_id: 's',
      }),
    );
    lines.push(
      JSON.stringify({
        type: 'user',
        message: {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: `t${i}`,
              content: `ok ${i} passing\n1 failing\n  case-${i}: expected 2, got 3`,
              is_error: false,
            },
          ],
        },
        session_id: 's',
      }),
    );
  }
  lines.length = messages - 1;
  lines.push(
    JSON.stringify({
      type: 'result',
      subtype: 'success',
      is_error: false,
      num_turns: messages,
      result: 'Done.',
      total_cost_usd: 1.5,
      session_id: 's',
    }),
  );
  return lines;
}

/** The text as a pipe delivers it: 64 KiB chunks. */
function chunksOf(text: string): string[] {
  const chunks: string[] = [];
  for (let i = 0; i < text.length; i += 65_536) chunks.push(text.slice(i, i + 65_536));
  return chunks;
}

async function floorInProcess(chunks: string[]): Promise<number> {
  const started = performance.now();
  let parsed = 0;
  const rl = readline.createInterface({ input: Readable.from(chunks), crlfDelay: Infinity });
  for await (const line of rl) {
    JSON.parse(line);
    parsed += 1;
  }
  if (parsed === 0) throw new Error('nothing parsed');
  return performance.now() - started;
}

async function batonInProcess(chunks: string[]): Promise<number> {
  const started = performance.now();
  const parser = createStreamParser();
  let tokens = 0;
  const lines = createLineSplitter(4 * 1024 * 1024, (line) => {
    parser.push(line);
    tokens = parser.streamedTokens;
  });
  // Chunk by chunk from the event loop, as a pipe delivers them.
  for await (const chunk of Readable.from(chunks)) lines.push(chunk as string);
  lines.end();
  if (!parser.result || tokens === 0) throw new Error('the parser saw no result');
  return performance.now() - started;
}

async function floorProcess(file: string): Promise<number> {
  const started = performance.now();
  const child = spawn('cat', [file], { stdio: ['ignore', 'pipe', 'ignore'] });
  const rl = readline.createInterface({ input: child.stdout, crlfDelay: Infinity });
  for await (const line of rl) JSON.parse(line);
  return performance.now() - started;
}

async function batonRunner(file: string, root: string, sinkUrl: string): Promise<number> {
  const workdir = fs.mkdtempSync(path.join(root, 'ws-'));
  // A prebuilt checkout, so that the clone is not part of what is measured.
  for (const args of [
    ['init', '--quiet'],
    ['commit', '--quiet', '--allow-empty', '-m', 'bench'],
  ]) {
    await new Promise((resolve) =>
      spawn('git', args, {
        cwd: workdir,
        stdio: 'ignore',
        env: { ...process.env, GIT_AUTHOR_NAME: 'b', GIT_AUTHOR_EMAIL: 'b@x', GIT_COMMITTER_NAME: 'b', GIT_COMMITTER_EMAIL: 'b@x' },
      }).once('exit', resolve),
    );
  }
  fs.mkdirSync(path.join(workdir, '.claude', 'commands'), { recursive: true });
  fs.writeFileSync(path.join(workdir, '.claude', 'commands', 'bench.md'), 'Do the bench.\n');
  let started = 0;
  let ended = 0;
  const outcome = await runAgent({
    stage: 'bench',
    workdir,
    callbackUrl: `${sinkUrl}/api/runs/1/complete`,
    callbackToken: 'bench-callback-token',
    env: { PATH: process.env.PATH },
    // `cat <file> <prompt file>` would read the prompt as a file: a shell prints the NDJSON and ignores its arguments.
    agentCommand: ['sh', '-c', `exec cat ${JSON.stringify(file)}`],
    outputFormat: 'stream-json',
    onLogLine: (line) => {
      if (line.startsWith('[baton] starting agent')) started = performance.now();
      else if (line.startsWith('[baton] agent exited')) ended = performance.now();
    },
  }).catch((err: unknown) => {
    throw new Error(`runner failed: ${String(err)}`);
  });
  if (outcome.status !== 'succeeded') throw new Error(`runner: ${outcome.summary}`);
  fs.rmSync(workdir, { recursive: true, force: true });
  return ended - started;
}

async function startSink(): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function best(repeat: number, measure: () => Promise<number>): Promise<number> {
  let fastest = Infinity;
  for (let i = 0; i < repeat; i++) fastest = Math.min(fastest, await measure());
  return fastest;
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-bench-output-'));
  const sink = await startSink();
  const loadStart = os.loadavg()[0]!;
  const rows: { name: string; cells: string[] }[] = [
    { name: 'in process: readline + JSON.parse (floor)', cells: [] },
    { name: 'in process: baton line splitter + stream parser', cells: [] },
    { name: 'whole runner: cat | readline + JSON.parse (floor)', cells: [] },
    { name: 'whole runner: baton runAgent (logs, masking, progress)', cells: [] },
  ];
  try {
    for (const size of options.sizes) {
      const lines = sessionLines(size);
      const text = `${lines.join('\n')}\n`;
      const file = path.join(root, `stream-${size}.ndjson`);
      fs.writeFileSync(file, text);
      const chunks = chunksOf(text);
      console.error(`${size.toLocaleString('en-US')} messages (${(text.length / 1e6).toFixed(1)} MB)…`);
      const timings = [
        await best(options.repeat, () => floorInProcess(chunks)),
        await best(options.repeat, () => batonInProcess(chunks)),
        await best(options.repeat, () => floorProcess(file)),
        await best(options.repeat, () => batonRunner(file, root, sink.url)),
      ];
      timings.forEach((ms, i) =>
        rows[i]!.cells.push(`${Math.round((size / ms) * 1000).toLocaleString('en-US')}/s (${(ms / 1000).toFixed(2)} s)`),
      );
    }
  } finally {
    await sink.close();
    fs.rmSync(root, { recursive: true, force: true });
  }

  const header = ['reader', ...options.sizes.map((s) => `${s.toLocaleString('en-US')} messages`)];
  const table = [header, ...rows.map((r) => [r.name, ...r.cells])];
  const widths = header.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
  const out = [
    '',
    `machine: ${os.availableParallelism()} CPUs (${os.cpus()[0]?.model.trim() ?? 'unknown CPU'}), Node ${process.version}, ${os.platform()} ${os.arch()}`,
    `load average (1 min): ${loadStart.toFixed(2)} at start, ${os.loadavg()[0]!.toFixed(2)} at end; best of ${options.repeat} per cell`,
    'before the fix: 5k messages 0.33 s, 10k 1.27 s, 20k 5.8 s, 40k 28 s: quadratic',
    '',
    ...table.map((row, r) =>
      [
        row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  '),
        ...(r === 0 ? [widths.map((w) => '-'.repeat(w)).join('  ')] : []),
      ].join('\n'),
    ),
    '',
    'Linear reading shows as a rate that stays about the same from column to column.',
  ];
  console.log(out.join('\n'));
}

await main();
