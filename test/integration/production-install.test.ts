import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertBuilt, runBaton, startServe } from '../helpers/baton-bin.js';
import { REPO_ROOT } from '../helpers/child.js';

/**
 * baton is installed for production with `npm ci --omit=dev` (the Dockerfile does it). This lays
 * out that very tree — every package package-lock.json does not mark `dev`, at the path the
 * lockfile gives it, hard-linked from node_modules — next to copies of bin/, dist/, assets/ and
 * package.json, and runs the commands a deployment runs from there. A runtime import of any
 * devDependency (TypeScript, vitest, the benchmark peers, the Claude Code CLI) fails them.
 */
interface LockPackage {
  dev?: boolean;
  devOptional?: boolean;
  optional?: boolean;
}
const lock = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockPackage> };
const manifest = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};
/**
 * What `npm ci --omit=dev` installs: the lockfile's packages without `dev` (devOptional ones are
 * dev too), and of the optional ones those this platform took (koffi's binaries for other systems
 * and CPUs are skipped by npm, as here).
 */
const productionPackages = Object.entries(lock.packages)
  .filter(([location, entry]) => location.startsWith('node_modules/') && !entry.dev && !entry.devOptional)
  .filter(([location, entry]) => !entry.optional || fs.existsSync(path.join(REPO_ROOT, location)))
  .map(([location]) => location);

/** Hard-links a package's files (a copy across filesystems), leaving out its nested node_modules. */
function linkPackage(from: string, to: string): void {
  fs.mkdirSync(to, { recursive: true });
  for (const entry of fs.readdirSync(from, { withFileTypes: true })) {
    if (entry.name === 'node_modules') continue;
    const [source, target] = [path.join(from, entry.name), path.join(to, entry.name)];
    if (entry.isDirectory()) linkPackage(source, target);
    else if (entry.isSymbolicLink()) fs.symlinkSync(fs.readlinkSync(source), target);
    else {
      try {
        fs.linkSync(source, target);
      } catch {
        fs.copyFileSync(source, target);
      }
    }
  }
}

let root: string;
let app: string;
let bin: string;
beforeAll(() => {
  assertBuilt();
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-production-'));
  app = path.join(root, 'app');
  for (const location of productionPackages) linkPackage(path.join(REPO_ROOT, location), path.join(app, location));
  for (const dir of ['bin', 'dist', 'assets']) fs.cpSync(path.join(REPO_ROOT, dir), path.join(app, dir), { recursive: true });
  fs.copyFileSync(path.join(REPO_ROOT, 'package.json'), path.join(app, 'package.json'));
  bin = path.join(app, 'bin/baton.js');
});
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

describe('baton installed with npm ci --omit=dev', () => {
  it('has the runtime dependencies and none of the devDependencies', () => {
    for (const name of Object.keys(manifest.dependencies)) expect(fs.existsSync(path.join(app, 'node_modules', name)), name).toBe(true);
    for (const name of Object.keys(manifest.devDependencies)) expect(fs.existsSync(path.join(app, 'node_modules', name)), name).toBe(false);
    // Resolution from the copy must not climb into a node_modules outside it.
    for (let dir = root; dir !== path.dirname(dir); dir = path.dirname(dir)) {
      expect(fs.existsSync(path.join(path.dirname(dir), 'node_modules')), `${path.dirname(dir)}/node_modules`).toBe(false);
    }
  });

  it('runs `baton --help` and `baton agent --help`', async () => {
    const help = await runBaton(['--help'], { bin, cwd: root });
    expect(help).toMatchObject({ code: 0, stdout: expect.stringContaining('Usage: baton <command>') });
    const agentHelp = await runBaton(['agent', '--help'], { bin, cwd: root });
    expect(agentHelp).toMatchObject({ code: 0, stdout: expect.stringContaining('CALLBACK_URL') });
  });

  it("has koffi's prebuilt binary: `baton agent --check` says the runner is undumpable", async () => {
    const check = await runBaton(['agent', '--check'], {
      bin,
      cwd: root,
      env: { BATON_AGENT_COMMAND: JSON.stringify([process.execPath]) },
    });
    expect(check.stdout, check.stderr).toContain('the runner is undumpable: processes of its uid cannot read its memory or environment');
  });

  it('runs `baton serve` on SQLite: answers, serves the API and the dashboard, and stops cleanly on SIGTERM', async () => {
    const token = 'production-install-admin-token-0123456789';
    const serve = await startServe(
      { BATON_DATA_DIR: path.join(root, 'data'), DATABASE_URL: `sqlite:${path.join(root, 'data/baton.db')}`, BATON_BOOTSTRAP_TOKEN: token },
      root,
      bin,
    );
    try {
      const runs = await fetch(`${serve.url}/api/runs`, { headers: { Authorization: `Bearer ${token}` } });
      expect(runs.status).toBe(200);
      expect(await runs.json()).toEqual({ runs: [], nextCursor: null });
      expect((await fetch(`${serve.url}/`)).status).toBe(200);
      expect((await fetch(`${serve.url}/metrics`, { headers: { Authorization: `Bearer ${token}` } })).status).toBe(200);
    } finally {
      expect(await serve.stop()).toBe(0);
    }
    expect(serve.output()).not.toMatch(/ERR_MODULE_NOT_FOUND|Cannot find (module|package)/);
  });
});

describe('docs/development.md', () => {
  it('names every runtime dependency in its "Dependencies" section', () => {
    const page = fs.readFileSync(path.join(REPO_ROOT, 'docs/development.md'), 'utf8');
    const section = /^## Dependencies\n([\s\S]*?)(?=^## |(?![\s\S]))/m.exec(page)?.[1] ?? '';
    for (const name of Object.keys(manifest.dependencies)) expect(section, name).toContain(`\`${name}\``);
  });
});
