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
 * Then what the forge gateway costs a clone: `git clone` of the same repository over git's smart
 * HTTP from the fake Gitea (the real `git http-backend`, test/fakes/gitea), directly with the bot's
 * token beside through baton's gateway with a run's capability (the gateway's routes on a real
 * HTTP server, the run looked up from a stub engine instead of the database), alternated.
 *
 *   npm run bench:sandbox [-- --runs 30 --clones 10 --files 400]
 *
 * Sequential starts and clones, median and p90 in ms, on whatever else the machine is doing (the
 * load average is printed). Asserts nothing.
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { serve } from '@hono/node-server';
import { nestedSandboxSpawn } from '../src/agent/index.js';
import { createEgressGate } from '../src/egress/index.js';
import { capabilityFor, forgeGatewayRoutes, giteaDialect } from '../src/forge-gateway/index.js';
import type { Run } from '../src/runs/index.js';
import { sandboxArguments } from '../src/workspaces/index.js';
import { createFakeGitea } from '../test/fakes/gitea/index.js';

const option = (name: string, fallback: number) => Number(process.argv[process.argv.indexOf(`--${name}`) + 1] || fallback) || fallback;
const runs = option('runs', 30);
const clones = option('clones', 10);
const files = option('files', 400);

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

/** Clones through the gateway and directly, alternated; the repository seeded with `files` files of 4-16 KiB. */
async function measureClones(root: string) {
  const gitea = await createFakeGitea();
  const token = `bench-dev-token-${randomBytes(8).toString('hex')}`;
  gitea.addUser('claude-dev', { token });
  gitea.addRepo('acme', 'app', { private: true, git: true });
  gitea.addCollaborator('acme', 'app', 'claude-dev', 'admin');
  const seed = path.join(root, 'seed');
  const git = (cwd: string, ...args: string[]) =>
    execFileSync('git', ['-c', 'user.name=bench', '-c', 'user.email=bench@example.invalid', ...args], { cwd, stdio: 'pipe' });
  git(root, 'clone', '-q', gitea.gitDir('acme', 'app'), seed);
  for (let i = 0; i < files; i++) {
    fs.mkdirSync(path.join(seed, 'src', String(i % 20)), { recursive: true });
    fs.writeFileSync(path.join(seed, 'src', String(i % 20), `f${i}.txt`), randomBytes(2048 + (i % 7) * 1024).toString('base64'));
  }
  git(seed, 'add', '-A');
  git(seed, 'commit', '-q', '-m', 'seed');
  git(seed, 'push', '-q', 'origin', 'HEAD:main');

  const hash = randomBytes(32).toString('hex');
  const run = { id: 1, status: 'running', owner: 'acme', repo: 'app', stage: 'develop', number: 1, payload: {} } as unknown as Run;
  const gateway = forgeGatewayRoutes({
    forges: { gitea: { dialect: giteaDialect({ forgeUrl: gitea.url }), tokens: { dev: token } } },
    callbackTokens: {
      verifyByTokenHash: async (_id: number, matches: (hash: string) => boolean) => (matches(hash) ? run : null),
    },
    engine: { appendProgress: async () => ({}) as never },
    logger: { warn: () => {}, info: () => {} } as never,
  });
  const server = serve({ fetch: gateway.fetch, hostname: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  const gatewayUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/gateway`;
  const auth = (secret: string) => `http.extraHeader=Authorization: Basic ${Buffer.from(`${secret}:x-oauth-basic`).toString('base64')}`;
  const ways = [
    { name: 'git clone, direct (bot token)', url: `${gitea.url}/acme/app.git`, header: auth(token) },
    { name: 'git clone, through the gateway', url: `${gatewayUrl}/acme/app.git`, header: auth(capabilityFor(1, hash)) },
  ];
  const cloneOnce = (way: (typeof ways)[number], n: number) =>
    new Promise<number>((resolve, reject) => {
      const target = path.join(root, `clone-${n}`);
      const began = process.hrtime.bigint();
      const child = spawn('git', ['-c', way.header, 'clone', '-q', way.url, target], {
        stdio: 'ignore',
        env: { ...process.env, GIT_TERMINAL_PROMPT: '0' },
      });
      child.once('error', reject);
      child.once('exit', (code) => {
        const ms = Number(process.hrtime.bigint() - began) / 1e6;
        fs.rmSync(target, { recursive: true, force: true });
        if (code !== 0) reject(new Error(`${way.name}: exit code ${code}`));
        else resolve(ms);
      });
    });
  try {
    const samples = ways.map(() => [] as number[]);
    let n = 0;
    for (const way of ways) await cloneOnce(way, n++); // warm up both
    for (let round = 0; round < clones; round++) for (const [i, way] of ways.entries()) samples[i]!.push(await cloneOnce(way, n++));
    const size = execFileSync('git', ['--git-dir', gitea.gitDir('acme', 'app'), 'count-objects', '-vH'], { encoding: 'utf8' });
    return {
      results: ways.map((way, i) => ({ name: way.name, ...quantiles(samples[i]!) })),
      size: /size-pack: (.*)/.exec(size)?.[1] ?? '?',
    };
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await gitea.close();
  }
}

function quantiles(samples: number[]) {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  return { p50: at(0.5), p90: at(0.9) };
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
  const loadClones = os.loadavg()[0]!;
  const cloned = await measureClones(root);
  console.log(
    `\ngit clone of ${files} files (pack ${cloned.size}), ${clones} each, alternated; load ${loadClones.toFixed(2)} → ${os.loadavg()[0]!.toFixed(2)}`,
  );
  const w = Math.max(width, ...cloned.results.map((r) => r.name.length));
  console.log(`${'clone'.padEnd(w)}  p50 ms  p90 ms  p50 over direct`);
  for (const r of cloned.results) {
    console.log(
      `${r.name.padEnd(w)}  ${r.p50.toFixed(1).padStart(6)}  ${r.p90.toFixed(1).padStart(6)}  ${(r.p50 - cloned.results[0]!.p50).toFixed(1).padStart(6)}`,
    );
  }
} finally {
  fs.rmSync(root, { recursive: true, force: true });
}
