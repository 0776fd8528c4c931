/**
 * What the local sandbox costs: the time from spawn to exit of a trivial command (`node -e 0`,
 * what every runner and many steps are), started the way each layer of a local run starts it:
 *
 * - plain: a child process, as with `local.sandbox: none` (the peer, in the same run);
 * - sandbox: in a run's bubblewrap sandbox, as the local provider starts a runner;
 * - nested: in the nested sandbox of a step (git, install, build, the agent), from the host;
 * - sandbox + gate: a run as it starts now, with its own network namespace and its egress gate
 *   (opened in this process, bound in, closed after), beside `sandbox` on the host's network.
 *
 *   npm run bench:sandbox [-- --runs 30]
 *
 * Sequential starts, median and p90 in ms, on whatever else the machine is doing (the load
 * average is printed). Asserts nothing.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { nestedSandboxSpawn } from '../src/agent/index.js';
import { createEgressGate } from '../src/egress/index.js';
import { sandboxArguments } from '../src/workspaces/index.js';

const runs = Number(process.argv[process.argv.indexOf('--runs') + 1] || 30) || 30;

function time(start: () => ReturnType<typeof spawn>): Promise<number> {
  const began = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    const child = start();
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code !== 0) reject(new Error(`exit code ${code}`));
      else resolve(Number(process.hrtime.bigint() - began) / 1e6);
    });
  });
}

async function measure(name: string, start: () => ReturnType<typeof spawn>, before?: () => Promise<() => Promise<void>>) {
  const once = async () => {
    const began = process.hrtime.bigint();
    const after = await before?.();
    await time(start);
    await after?.();
    return Number(process.hrtime.bigint() - began) / 1e6;
  };
  await once(); // warm the page cache
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) samples.push(await once());
  samples.sort((a, b) => a - b);
  const at = (q: number) => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))]!;
  return { name, p50: at(0.5), p90: at(0.9) };
}

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-bench-sandbox-'));
fs.chmodSync(root, 0o711);
try {
  const work = path.join(root, 'work');
  const home = path.join(root, 'home');
  const egress = path.join(root, 'egress');
  // As root, runs are nobody (local.rootUser); measured the same way.
  const asUser: { uid?: number; gid?: number } = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};
  for (const dir of [work, home, egress]) {
    fs.mkdirSync(dir);
    if (asUser.uid !== undefined) fs.chownSync(dir, asUser.uid, asUser.gid!);
  }
  const node = process.execPath;
  const outer = sandboxArguments({ workDir: work, homeDir: home, readOnly: [], hidden: [] });
  const gated = sandboxArguments({ workDir: work, homeDir: home, readOnly: [], hidden: [], egressDir: egress });
  const openGate = async () => {
    const gate = await createEgressGate({
      socketPath: path.join(egress, 'egress.sock'),
      rules: [],
      owner: asUser.uid ? { uid: asUser.uid, gid: asUser.gid! } : undefined,
    });
    return () => gate.close();
  };
  const nested = nestedSandboxSpawn();
  const loadStart = os.loadavg()[0]!;
  const results = [
    await measure('plain (local.sandbox: none)', () => spawn(node, ['-e', '0'], { stdio: 'ignore', ...asUser })),
    await measure('sandbox (a run)', () => spawn('bwrap', [...outer, '--', node, '-e', '0'], { stdio: 'ignore', ...asUser })),
    await measure('nested (a step)', () => nested(node, ['-e', '0'], { cwd: root, env: process.env, stdio: 'ignore' })),
    await measure(
      'sandbox + egress gate (a run, own network)',
      () => spawn('bwrap', [...gated, '--', node, '-e', '0'], { stdio: 'ignore', ...asUser }),
      openGate,
    ),
  ];
  const width = Math.max(...results.map((r) => r.name.length));
  console.log(
    `node -e 0, ${runs} sequential starts each; ${os.cpus().length} CPUs, load ${loadStart.toFixed(2)} → ${os.loadavg()[0]!.toFixed(2)}`,
  );
  console.log(`${'start'.padEnd(width)}  p50 ms  p90 ms  p50 over plain`);
  for (const r of results) {
    console.log(
      `${r.name.padEnd(width)}  ${r.p50.toFixed(1).padStart(6)}  ${r.p90.toFixed(1).padStart(6)}  ${(r.p50 - results[0]!.p50).toFixed(1).padStart(6)}`,
    );
  }
} finally {
  fs.rmSync(root, { recursive: true, force: true });
}
