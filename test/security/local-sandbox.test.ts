import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseAllowRule } from '../../src/egress/index.js';
import { createLocalProvider, type LocalProviderOptions, type WorkspaceProvider } from '../../src/workspaces/index.js';
import { defaultSpec } from '../conformance/workspace-provider.js';
import { startCallbackReceiver, type CallbackReceiver } from '../fakes/agent/callback-receiver.js';
import { createBareRepo, git } from '../fakes/agent/git-repos.js';
import { createSandboxFixture, type SandboxFixture } from '../helpers/sandbox.js';
import { until } from '../helpers/until.js';

/**
 * What a hostile agent was found to reach, replayed against the local provider with the real runner and the real
 * bubblewrap: an agent (the spy) tries to read baton's environment, another run's callback token
 * (its environment, its files, its open descriptors, its memory) and workspace, baton's data
 * directory, database and config file, writes to the database, and reports a run it does not own
 * as succeeded with every token it found. In the sandbox all of it fails. The same spy without
 * the sandbox (`local.sandbox: none`) finds what the issue found, which shows the spy can see a leak.
 */

const SPY = fileURLToPath(new URL('../fakes/agent/spy-agent.mjs', import.meta.url));
const AGENT_CLI = fileURLToPath(new URL('../fakes/agent/agent-cli.ts', import.meta.url));
const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

interface Report {
  uid: number;
  env: string[];
  processes: { pid: number; cmdline: string }[];
  reads: { target: string; ok: boolean; error?: string; text?: string }[];
  writes: { target: string; ok: boolean; error?: string }[];
  tokens: string[];
  callbacks: { url: string; status?: number }[];
}

const token = () => randomBytes(32).toString('base64url');

let fixture: SandboxFixture;
const declaredDirs: string[] = [];
let provider: WorkspaceProvider | undefined;
let server: ChildProcess | undefined;
let reports: http.Server | undefined;
const receivers: CallbackReceiver[] = [];

beforeEach(() => {
  fixture = createSandboxFixture();
});

afterEach(async () => {
  if (provider) {
    for (const w of await provider.list()) await provider.delete(w.name);
    await provider.close?.();
    provider = undefined;
  }
  server?.kill('SIGKILL');
  server = undefined;
  await new Promise<void>((resolve) => (reports ? reports.close(() => resolve()) : resolve()));
  reports = undefined;
  for (const r of receivers.splice(0)) await r.close();
  for (const dir of declaredDirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  fixture.cleanup();
});

/** Two runs side by side, a victim (its agent waits) and the spy, and what the spy reported. */
async function attack(sandbox: LocalProviderOptions['sandbox']) {
  const secrets = {
    server: `server-secret-${token()}`,
    victimCallback: token(),
    victimForge: `victim-forge-${token()}`,
    spyCallback: token(),
    spyForge: `spy-forge-${token()}`,
    oauth: `oauth-${token()}`,
    database: `database-row-${token()}`,
    config: `config-secret-${token()}`,
    declared: `declared-repository-${token()}`,
  };
  // baton serve's stand-in: a process whose environment holds the server's secrets.
  server = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1 << 30)'], {
    env: { PATH: process.env.PATH, GITEA_DEV_TOKEN: secrets.server },
    stdio: 'ignore',
  });
  const database = path.join(fixture.dataDir, 'baton.db');
  fs.writeFileSync(database, `SQLite format 3\0api_tokens ${secrets.database}`);
  // A config file inside a path runs may read, hidden by name.
  const config = path.join(fixture.shared, 'baton.yaml');
  fs.writeFileSync(config, `bots: { secret: ${secrets.config} }\n`);

  let report: Report | undefined;
  reports = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      report = JSON.parse(body) as Report;
      res.end();
    });
  });
  await new Promise<void>((resolve) => reports!.listen(0, '127.0.0.1', resolve));

  const victim = await startCallbackReceiver({ token: secrets.victimCallback, runId: 1, failFirst: 0 });
  const spied = await startCallbackReceiver({ token: secrets.spyCallback, runId: 2, failFirst: 0 });
  receivers.push(victim, spied);
  const victimDir = path.join(fixture.dataDir, 'workspaces', 'victim');
  // The victim's repository is one declared in baton.yaml as a local path: its run may read it,
  // no other run may (it is bound into the victim's sandbox alone).
  const declared = fs.mkdtempSync(path.join(path.dirname(fixture.dataDir), 'baton-declared-'));
  fs.chmodSync(declared, 0o755);
  declaredDirs.push(declared);
  git(declared, 'init', '--quiet', '--initial-branch=main', '.');
  fs.writeFileSync(path.join(declared, 'SECRET.md'), `${secrets.declared}\n`);
  git(declared, 'add', '-A');
  git(declared, 'commit', '--quiet', '-m', 'declared');
  const targets = path.join(fixture.shared, 'targets.json');
  fs.writeFileSync(
    targets,
    JSON.stringify({
      pids: [server.pid],
      paths: [
        fixture.dataDir,
        database,
        config,
        victimDir,
        path.join(victimDir, 'work'),
        path.join(victimDir, 'runner.json'),
        path.join(declared, 'SECRET.md'),
      ],
      writable: [database],
      callbackUrls: [victim.callbackUrl],
      reportUrl: `http://127.0.0.1:${(reports.address() as AddressInfo).port}/`,
      hangIssues: ['1'],
      inspect: fixture.dataDir,
    }),
  );
  const cloneUrl = createBareRepo(fixture.shared, 'app');
  provider = createLocalProvider({
    dataDir: fixture.dataDir,
    command: [process.execPath, '--import', TSX, AGENT_CLI],
    env: { BATON_AGENT_COMMAND: JSON.stringify([process.execPath, SPY, '--targets', targets]) },
    secrets: { CLAUDE_CODE_OAUTH_TOKEN: secrets.oauth },
    stopGraceMs: 2_000,
    sandbox: sandbox?.kind === 'bwrap' ? { ...sandbox, hiddenPaths: [config] } : sandbox,
    // The one host the spy may reach through its gate: where it sends its report.
    egress: { rules: () => [parseAllowRule(`127.0.0.1:${(reports!.address() as AddressInfo).port}`, true)!] },
  });
  const run = (name: string, runId: number, callbackUrl: string, callbackToken: string, forgeToken: string) =>
    provider!.create({ ...defaultSpec(name), runId, number: runId, stage: 'analyse', cloneUrl, callbackUrl, callbackToken, forgeToken });

  await provider.create({
    ...defaultSpec('victim'),
    runId: 1,
    number: 1,
    stage: 'analyse',
    cloneUrl: declared,
    repositoryPath: declared,
    callbackUrl: victim.callbackUrl,
    callbackToken: secrets.victimCallback,
    forgeToken: secrets.victimForge,
  });
  // The victim's agent is up (and its runner holds its token) before the spy looks.
  await until(
    () =>
      fs.existsSync(path.join(victimDir, 'runner.log')) && fs.readFileSync(path.join(victimDir, 'runner.log'), 'utf8').includes('[init]'),
    'the victim agent to start',
  );
  await run('spy', 2, spied.callbackUrl, secrets.spyCallback, secrets.spyForge);
  const outcome = await spied.accepted();
  expect(outcome, JSON.stringify(outcome)).toMatchObject({ status: 'succeeded', summary: 'spy finished' });
  await until(() => report, 'the spy report');
  return { report: report!, secrets, victim, server: server.pid!, declared };
}

/** Everything the spy read or found, in one string. */
const seen = (report: Report) => JSON.stringify({ reads: report.reads, tokens: report.tokens, processes: report.processes });

describe('an agent in the bubblewrap sandbox', () => {
  it("cannot read baton's environment, another run's token or workspace, the database or the config, nor report another run", async () => {
    const { report, secrets, victim, declared } = await attack(fixture.sandbox);

    // Not root, and its own processes only: neither baton nor any runner, its own or another.
    expect(report.uid).not.toBe(0);
    expect(report.processes.map((p) => p.cmdline).join('\n')).not.toMatch(/agent-cli|setInterval/);
    expect(report.reads.filter((r) => r.target.endsWith('/mem'))).toEqual([]);
    // Its own secrets are where the stage wants them, and nothing more: no callback token.
    expect(report.env).toContain('GITEA_TOKEN');
    expect(report.env).toContain('CLAUDE_CODE_OAUTH_TOKEN');
    expect(report.env).not.toContain('CALLBACK_TOKEN');
    expect(report.env).not.toContain('BATON_SECRETS_FD');

    const text = seen(report);
    for (const [name, secret] of Object.entries(secrets)) {
      if (name === 'spyForge' || name === 'oauth') continue; // its own, in its own environment
      expect(text, name).not.toContain(secret);
    }
    const byTarget = (target: string) => report.reads.find((r) => r.target === target);
    expect(byTarget(fixture.dataDir)).toMatchObject({ ok: false, error: 'ENOENT' });
    expect(byTarget(path.join(fixture.dataDir, 'baton.db'))).toMatchObject({ ok: false, error: 'ENOENT' });
    expect(byTarget(path.join(fixture.dataDir, 'workspaces', 'victim', 'work'))).toMatchObject({ ok: false, error: 'ENOENT' });
    // Another run's declared local repository does not exist for it (the victim cloned it: its agent started).
    expect(byTarget(path.join(declared, 'SECRET.md'))).toMatchObject({ ok: false, error: 'ENOENT' });
    // The config file sits in a readable directory, but is covered (by a device node it may not open).
    expect(byTarget(path.join(fixture.shared, 'baton.yaml'))).toMatchObject({ ok: false, error: 'EACCES' });
    expect(report.writes).toEqual([{ target: path.join(fixture.dataDir, 'baton.db'), ok: false, error: 'ENOENT' }]);
    expect(report.tokens).toEqual([]);
    expect(victim.completions).toEqual([]);
  });
});

describe('the same agent without a sandbox (local.sandbox: none), as it was found', () => {
  it("reads baton's environment and the database, and as root another run's token, with which it reports that run", async () => {
    const { report, secrets, victim, server: serverPid, declared } = await attack({ kind: 'none' });
    // The control of the declared-repository check: without the sandbox, every run reads it.
    expect(report.reads.find((r) => r.target === path.join(declared, 'SECRET.md'))?.text).toContain(secrets.declared);

    const environ = report.reads.find((r) => r.target === `/proc/${serverPid}/environ`);
    expect(environ).toMatchObject({ ok: true });
    expect(environ?.text).toContain(secrets.server);
    expect(report.reads.find((r) => r.target === path.join(fixture.dataDir, 'baton.db'))?.text).toContain(secrets.database);
    expect(report.writes[0]).toMatchObject({ ok: true });
    // The victim's runner is undumpable, which stops a spy of its uid (test/security/runner-memory.test.ts),
    // not root: baton as root without the sandbox runs its agents as root, and they read any memory.
    if (report.uid === 0) {
      expect(report.tokens).toContain(secrets.victimCallback);
      expect(victim.completions.some((c) => c.body.summary === 'forged by the spy')).toBe(true);
    } else {
      expect(report.tokens).not.toContain(secrets.victimCallback);
      expect(victim.completions).toEqual([]);
    }
  });
});
