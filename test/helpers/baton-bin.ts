import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT } from './child.js';
import { until } from './until.js';

export const BATON_BIN = path.join(REPO_ROOT, 'bin/baton.js');

/** The e2e suites run the built CLI, as a user would; `npm test` builds it first. */
export function assertBuilt(): void {
  if (!fs.existsSync(path.join(REPO_ROOT, 'dist/cli/index.js')))
    throw new Error('dist/ is missing: run "npm run build" (npm test does it)');
}

export interface BatonRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `baton <args>` to completion (`bin`: another copy of bin/baton.js, e.g. a production install).
 * Without `cwd` it runs in an empty directory of its own, never in the checkout, where a user's
 * own `./baton.yaml` or `./data` would change what it does.
 */
export async function runBaton(
  args: string[],
  options: { env?: Record<string, string>; cwd?: string; bin?: string } = {},
): Promise<BatonRun> {
  assertBuilt();
  const ownCwd = options.cwd === undefined ? fs.mkdtempSync(path.join(os.tmpdir(), 'baton-cwd-')) : undefined;
  try {
    return await spawnBaton(args, { ...options, cwd: options.cwd ?? ownCwd! });
  } finally {
    if (ownCwd) fs.rmSync(ownCwd, { recursive: true, force: true });
  }
}

function spawnBaton(args: string[], options: { env?: Record<string, string>; cwd: string; bin?: string }): Promise<BatonRun> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [options.bin ?? BATON_BIN, ...args], {
      cwd: options.cwd,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

export interface ServeHandle {
  process: ChildProcess;
  url: string;
  output(): string;
  exited: Promise<number | null>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Starts `baton serve` on a free port (or on `port`: a restarted server where its runners call
 * back) and waits until /health answers.
 */
export async function startServe(env: Record<string, string>, cwd: string, bin = BATON_BIN, port?: number): Promise<ServeHandle> {
  assertBuilt();
  port ??= await freePort();
  const child = spawn(process.execPath, [bin, 'serve'], {
    cwd,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', PORT: String(port), LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = `http://127.0.0.1:${port}`;
  try {
    await until(async () => {
      if (child.exitCode !== null) throw new Error(`baton serve exited with ${child.exitCode}`);
      return (await fetch(`${url}/health`).catch(() => null))?.ok; // not listening yet: null
    }, 'baton serve to answer /health');
  } catch (err) {
    child.kill('SIGKILL');
    await exited;
    throw new Error(`${(err as Error).message}\n${output}`, { cause: err });
  }
  return {
    process: child,
    url,
    output: () => output,
    exited,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

export async function freePort(): Promise<number> {
  const net = await import('node:net');
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as import('node:net').AddressInfo;
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}
