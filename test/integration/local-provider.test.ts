import { spawn } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PermanentError } from '../../src/background/index.js';
import { createLocalProvider, type WorkspaceProvider } from '../../src/workspaces/index.js';
import { defaultSpec } from '../conformance/workspace-provider.js';
import { startCallbackReceiver } from '../fakes/agent/callback-receiver.js';
import { createBareRepo } from '../fakes/agent/git-repos.js';
import { createSandboxFixture, type SandboxFixture } from '../helpers/sandbox.js';
import { until } from '../helpers/until.js';

const FAKE_CLAUDE = fileURLToPath(new URL('../fakes/agent/fake-claude.mjs', import.meta.url));
const AGENT_CLI = fileURLToPath(new URL('../fakes/agent/agent-cli.ts', import.meta.url));
const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

let fixture: SandboxFixture;
let dataDir: string;
const providers: WorkspaceProvider[] = [];
const makeProvider = (options: Partial<Parameters<typeof createLocalProvider>[0]> = {}) => {
  const p = createLocalProvider({
    dataDir,
    // The fake CLI as a stand-in runner; it parses its arguments as Claude Code does, so it needs -p.
    command: [process.execPath, FAKE_CLAUDE, '-p', '--output-format', 'stream-json', '--verbose', '--', 'stand-in runner'],
    env: { FAKE_CLAUDE_MODE: 'hang' },
    stopGraceMs: 500,
    sandbox: fixture.sandbox,
    ...options,
  });
  providers.push(p);
  return p;
};

beforeEach(() => {
  fixture = createSandboxFixture();
  dataDir = fixture.dataDir;
});

afterEach(async () => {
  for (const p of providers.splice(0)) {
    for (const w of await p.list()) await p.delete(w.name);
    await p.close?.();
  }
  fixture.cleanup();
});

/** Writes what the runner was given (env, and the secrets on its descriptor) to files in its workspace. */
const REPORTING_RUNNER =
  'const fs = require("fs"); fs.writeFileSync("env.json", JSON.stringify(process.env));' +
  'fs.writeFileSync("secrets.txt", fs.readFileSync(Number(process.env.BATON_SECRETS_FD), "utf8")); console.log("runner says hi")';

describe.each(['bwrap', 'none'] as const)('local workspace provider, sandbox %s', (kind) => {
  const provider = (options: Partial<Parameters<typeof createLocalProvider>[0]> = {}) =>
    makeProvider({ ...(kind === 'none' ? { sandbox: { kind } } : {}), ...options });

  it('starts runs below baton in CPU and I/O priority (local.runnerNice), or at it with 0', async () => {
    // Field 19 of /proc/self/stat is the niceness; `ionice` (util-linux) prints the I/O class.
    const REPORT =
      `fs=require("fs"); fs.writeFileSync("nice.txt", fs.readFileSync("/proc/self/stat","utf8").split(") ")[1].split(" ")[16]);` +
      `fs.writeFileSync("io.txt", require("child_process").execFileSync("ionice", ["-p", String(process.pid)], { encoding: "utf8" }))`;
    const mine = Number(fs.readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ')[16]);
    for (const [runnerNice, name] of [
      [undefined, 'nice-default'],
      [0, 'nice-off'],
    ] as const) {
      const p = provider({ command: [process.execPath, '-e', REPORT], ...(runnerNice === undefined ? {} : { runnerNice }) });
      await p.create(defaultSpec(name));
      await until(async () => (await p.get(name))?.status === 'stopped', `${name} to be stopped`);
      const work = path.join(dataDir, 'workspaces', name, 'work');
      const nice = Number(fs.readFileSync(path.join(work, 'nice.txt'), 'utf8'));
      const io = fs.readFileSync(path.join(work, 'io.txt'), 'utf8').trim();
      if (runnerNice === 0) {
        expect(nice).toBe(mine);
      } else {
        expect(nice).toBe(Math.min(19, mine + 10));
        expect(io).toBe('best-effort: prio 7');
      }
    }
  });

  it('passes the run as env and the secrets on a descriptor, logs the output, and leaves no secret in a file or the env', async () => {
    const p = provider({
      command: [process.execPath, '-e', REPORTING_RUNNER],
      env: { CLAUDE_CODE_OAUTH_TOKEN: 'oauth-secret-value' },
    });
    const spec = {
      ...defaultSpec('env-check'),
      deployEnv: 'staging',
      build: 'heavy' as const,
      setupTokens: ['forge' as const],
      skipPermissions: false,
      extra: { BATON_INSTALL_COMMAND: 'npm ci', 'not an env name': 'x' },
    };
    await p.create(spec);
    const dir = path.join(dataDir, 'workspaces', 'env-check');
    await until(async () => (await p.get('env-check'))?.status === 'stopped', 'env-check to be stopped');
    const env = JSON.parse(fs.readFileSync(path.join(dir, 'work', 'env.json'), 'utf8')) as Record<string, string>;
    expect(env).toMatchObject({
      TASK_TYPE: 'develop',
      ISSUE_NUMBER: '7',
      GITEA_URL: 'https://forge.invalid',
      GITEA_ORG: 'acme',
      GITEA_REPO: 'app',
      REPO_CLONE_URL: 'https://forge.invalid/acme/app.git',
      DEPLOY_ENV: 'staging',
      // In the sandbox the run has no route to baton: it calls back through its egress gate.
      CALLBACK_URL: kind === 'bwrap' ? 'http://baton.internal/api/runs/1/complete' : 'http://127.0.0.1:9/api/runs/1/complete',
      ...(kind === 'bwrap'
        ? { BATON_EGRESS_SOCKET: '/run/baton/egress.sock', HTTPS_PROXY: 'http://127.0.0.1:3128', http_proxy: 'http://127.0.0.1:3128' }
        : {}),
      BATON_RUN_ID: '1',
      BATON_MAX_DURATION_MS: '60000',
      BATON_AGENT_LOG_PORT: '0',
      BATON_WORKDIR: kind === 'bwrap' ? '/workspace' : path.join(dir, 'work'),
      BATON_INSTALL_COMMAND: 'npm ci',
      BATON_STAGE_BUILD: 'heavy',
      BATON_SETUP_TOKENS: 'forge',
      BATON_SECRETS_FD: '3',
      BATON_STAGE_SKIP_PERMISSIONS: 'false',
    });
    for (const name of ['CALLBACK_TOKEN', 'GITEA_TOKEN', 'CLAUDE_CODE_OAUTH_TOKEN', 'not an env name']) expect(env[name]).toBeUndefined();
    expect(
      fs
        .readFileSync(path.join(dir, 'work', 'secrets.txt'), 'utf8')
        .split('\n')
        .sort(),
    ).toEqual([
      '',
      'CALLBACK_TOKEN=callback-token-for-conformance',
      'CLAUDE_CODE_OAUTH_TOKEN=oauth-secret-value',
      'GITEA_TOKEN=forge-token-for-conformance',
    ]);
    // baton's own environment is not inherited wholesale.
    expect(env.VITEST).toBeUndefined();
    expect(fs.readFileSync(path.join(dir, 'runner.log'), 'utf8')).toContain('runner says hi');
    // Outside the test's own report, no file of the workspace holds a secret.
    const files = fs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter((f) => f.isFile() && f.name !== 'secrets.txt');
    for (const file of files) {
      const text = fs.readFileSync(path.join(file.parentPath, file.name), 'utf8');
      for (const secret of ['forge-token-for-conformance', 'callback-token-for-conformance', 'oauth-secret-value']) {
        expect(text, file.name).not.toContain(secret);
      }
    }
    // Written when this process reaps the runner, which may come just after it looks stopped.
    await until(() => fs.existsSync(path.join(dir, 'exit.json')), 'exit.json to be written');
    expect(JSON.parse(fs.readFileSync(path.join(dir, 'exit.json'), 'utf8'))).toMatchObject({ code: 0, signal: null });
  });

  it('lets a restarted baton tell live runners from dead ones', async () => {
    const first = provider();
    await first.create(defaultSpec('alive'));
    await until(async () => (await first.get('alive'))?.status === 'running', 'alive to be running');

    const second = provider();
    expect((await second.get('alive'))?.status).toBe('running');
    await second.stop('alive');
    await until(async () => (await second.get('alive'))?.status === 'stopped', 'alive to be stopped');
  });

  it("adopts a workspace of its name only when its runner holds one of the run's tokens (a restored database numbers runs again)", async () => {
    const hash = (token: string) => createHash('sha256').update(token).digest('hex');
    const record = () => JSON.parse(fs.readFileSync(path.join(dataDir, 'workspaces', 'renumbered', 'runner.json'), 'utf8'));
    const first = provider();
    await first.create({ ...defaultSpec('renumbered'), callbackToken: 'token-of-the-forgotten-run', adoptableTokenHashes: [] });
    await until(async () => (await first.get('renumbered'))?.status === 'running', 'the first run to be running');
    const forgotten = record() as { pid: number; claim: string; tokenHash: string };
    expect(forgotten.tokenHash).toBe(hash('token-of-the-forgotten-run'));

    // A later attempt of the same run (its earlier token kept by the engine) adopts it: same runner.
    const restarted = provider();
    await restarted.create({
      ...defaultSpec('renumbered'),
      callbackToken: 'token-of-a-later-attempt',
      adoptableTokenHashes: [hash('token-of-the-forgotten-run')],
    });
    expect(record()).toMatchObject({ claim: forgotten.claim, pid: forgotten.pid });

    // Another run of that name, which knows none of its tokens: the old runner is ended, a new one started.
    const errors: string[] = [];
    const restored = provider({ onError: (message) => errors.push(message) });
    const ws = await restored.create({ ...defaultSpec('renumbered'), callbackToken: 'token-of-the-new-run-42', adoptableTokenHashes: [] });
    expect(ws.status).toBe('running');
    const fresh = record() as { pid: number; claim: string; tokenHash: string };
    expect(fresh.claim).not.toBe(forgotten.claim);
    expect(fresh.tokenHash).toBe(hash('token-of-the-new-run-42'));
    expect(fs.existsSync(`/proc/${forgotten.pid}`) && !fs.readFileSync(`/proc/${forgotten.pid}/stat`, 'utf8').includes(') Z')).toBe(false);
    expect(errors).toEqual([expect.stringContaining('was started for another run')]);
  });

  it('does not mistake an unrelated process with a recycled pid for the runner', async () => {
    const dir = path.join(dataDir, 'workspaces', 'recycled');
    fs.mkdirSync(dir, { recursive: true });
    // This test process is alive, but was not started at the recorded time.
    fs.writeFileSync(
      path.join(dir, 'runner.json'),
      JSON.stringify({ pid: process.pid, startedAt: Date.now(), startTicks: 1, runId: 1, stage: 'develop' }),
    );
    const p = provider();
    expect((await p.get('recycled'))?.status).toBe(fs.existsSync('/proc/self/stat') ? 'stopped' : 'running');
    await p.stop('recycled'); // must not signal this process
    expect(await p.list()).toHaveLength(1);
  });

  it('SIGKILLs a runner that ignores SIGTERM after the grace period', async () => {
    const p = provider({ env: { FAKE_CLAUDE_MODE: 'hang-ignore-term' }, stopGraceMs: 300 });
    await p.create(defaultSpec('stubborn'));
    // Give the fake time to install its SIGTERM handler.
    const log = path.join(dataDir, 'workspaces', 'stubborn', 'runner.log');
    await until(() => fs.existsSync(log) && fs.readFileSync(log, 'utf8').includes('"subtype":"init"'), 'the fake agent to start');
    await p.stop('stubborn');
    expect((await p.get('stubborn'))?.status).toBe('stopping');
    await until(async () => (await p.get('stubborn'))?.status === 'stopped', 'stubborn to be stopped');
  });

  it('finds a runner killed -9 while its agent works, and leaves no process of the run after teardown', async () => {
    // Every process of the run inherits this variable: the runner, the agent and what it started.
    const marker = `RUN_MARKER=killed-runner-${randomUUID()}`;
    const ofTheRun = () =>
      fs.readdirSync('/proc').filter((pid) => {
        try {
          return /^\d+$/.test(pid) && fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(marker);
        } catch {
          return false;
        }
      });
    const p = provider({
      command: [process.execPath, '--import', TSX, AGENT_CLI],
      env: { RUN_MARKER: marker.slice('RUN_MARKER='.length), BATON_AGENT_COMMAND: JSON.stringify(['/bin/sh', '-c', 'sleep 1000 & wait']) },
    });
    await p.create({ ...defaultSpec('killed'), stage: 'analyse', cloneUrl: createBareRepo(fixture.shared, 'killed') });
    const dir = path.join(dataDir, 'workspaces', 'killed');
    await until(
      () =>
        ofTheRun().some((pid) => {
          try {
            return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith('sleep\0');
          } catch {
            return false; // exited since it was listed (the runner's clone steps come and go)
          }
        }),
      'the agent to be at work',
    );
    const record = JSON.parse(fs.readFileSync(path.join(dir, 'runner.json'), 'utf8')) as { pid: number; runner: { pid: number } | null };
    const runner = record.runner?.pid ?? record.pid;
    process.kill(runner, 'SIGKILL');
    await until(async () => (await p.get('killed'))?.status === 'stopped', 'the workspace to read stopped');
    // The agent outlived its runner (in its own group, and in a sandbox its own PID namespace)...
    expect(ofTheRun().length).toBeGreaterThan(0);
    // ...until teardown.
    await p.delete('killed');
    await until(() => !fs.existsSync(dir), 'the workspace to be deleted');
    expect(ofTheRun()).toEqual([]);
  });

  it('ends the runner of a start whose baton died before recording it, when the workspace is made again or deleted', async () => {
    const runnersOf = (claim: string) =>
      fs.readdirSync('/proc').filter((pid) => {
        try {
          return (
            /^\d+$/.test(pid) && fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(`BATON_WORKSPACE_CLAIM=${claim}`)
          );
        } catch {
          return false;
        }
      });
    const recordFile = (name: string) => path.join(dataDir, 'workspaces', name, 'runner.json');
    /** A started runner, and its record as a baton killed -9 between spawning it and recording its pid left it. */
    const orphan = async (name: string) => {
      const first = provider();
      await first.create(defaultSpec(name));
      await until(async () => (await first.get(name))?.status === 'running', `${name} to be running`);
      const record = JSON.parse(fs.readFileSync(recordFile(name), 'utf8')) as { claim: string };
      fs.writeFileSync(recordFile(name), JSON.stringify({ ...record, pid: null, pgid: null, startTicks: null, runner: null }));
      // Running as the provider reads its record; its process may be a moment behind in /proc.
      await until(() => runnersOf(record.claim).length > 0, `${name}'s runner in /proc`);
      return record.claim;
    };

    // The next baton sees a start it does not own that never recorded a runner: failed.
    const again = await orphan('orphan-again');
    const next = provider();
    expect((await next.get('orphan-again'))?.status).toBe('failed');
    // The run's retry makes the workspace again: the old runner does not live on beside the new one.
    await next.create(defaultSpec('orphan-again'));
    await until(() => runnersOf(again).length === 0, 'the orphaned runner to be ended');
    const fresh = JSON.parse(fs.readFileSync(recordFile('orphan-again'), 'utf8')) as { claim: string };
    expect(fresh.claim).not.toBe(again);
    expect(runnersOf(fresh.claim).length).toBeGreaterThan(0);

    // Teardown of such a workspace ends its runner too.
    const deleted = await orphan('orphan-deleted');
    await provider().delete('orphan-deleted');
    await until(() => !fs.existsSync(path.dirname(recordFile('orphan-deleted'))), 'the workspace to be deleted');
    expect(runnersOf(deleted)).toEqual([]);
  });

  it('rejects names that are not safe directory names', async () => {
    const p = provider();
    await expect(p.create(defaultSpec('../escape'))).rejects.toBeInstanceOf(PermanentError);
    expect(await p.get('../escape')).toBeNull();
  });

  it('runs the real runner end to end: clone, fake agent, completion callback', async () => {
    const token = 'callback-token-end-to-end';
    const receiver = await startCallbackReceiver({ token, runId: 5, failFirst: 0 });
    try {
      const cloneUrl = createBareRepo(fixture.shared, 'shop');
      const p = provider({
        command: [process.execPath, '--import', TSX, AGENT_CLI],
        env: {
          FAKE_CLAUDE_MODE: 'success',
          BATON_AGENT_COMMAND: JSON.stringify([process.execPath, FAKE_CLAUDE]),
        },
      });
      await p.create({
        ...defaultSpec('e2e'),
        runId: 5,
        stage: 'analyse',
        cloneUrl,
        repo: 'shop',
        callbackUrl: receiver.callbackUrl,
        callbackToken: token,
      });
      const body = await receiver.accepted();
      expect(body, JSON.stringify(body)).toMatchObject({ status: 'succeeded', exitCode: 0 });
      expect(body.summary).toMatch(/^Finished the task for: /);
      await until(async () => (await p.get('e2e'))?.status === 'stopped', 'e2e to be stopped');
      expect(fs.existsSync(path.join(dataDir, 'workspaces', 'e2e', 'work', 'shop', 'DEVELOP.md'))).toBe(true);
      expect(fs.readFileSync(path.join(dataDir, 'workspaces', 'e2e', 'runner.log'), 'utf8')).not.toContain(token);
    } finally {
      await receiver.close();
    }
  });
});

describe('local workspace provider in the sandbox', () => {
  const processesWith = (marker: string) =>
    fs.readdirSync('/proc').filter((pid) => {
      try {
        return /^\d+$/.test(pid) && fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(marker);
      } catch {
        return false;
      }
    });

  it('ends what the agent left running, even in a session of its own, with the run', async () => {
    const marker = `left-behind-${Date.now()}`;
    const token = 'callback-token-orphans';
    const receiver = await startCallbackReceiver({ token, runId: 6, failFirst: 0 });
    try {
      const p = makeProvider({
        command: [process.execPath, '--import', TSX, AGENT_CLI],
        env: {
          BATON_AGENT_COMMAND: JSON.stringify([
            '/bin/sh',
            '-c',
            `setsid sh -c 'sleep 1000; : ${marker}' </dev/null >/dev/null 2>&1 & echo '{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"left one behind"}'`,
          ]),
        },
      });
      await p.create({
        ...defaultSpec('orphans'),
        runId: 6,
        stage: 'analyse',
        cloneUrl: createBareRepo(fixture.shared, 'orphans'),
        callbackUrl: receiver.callbackUrl,
        callbackToken: token,
      });
      expect(await receiver.accepted()).toMatchObject({ status: 'succeeded', summary: 'left one behind' });
      await until(async () => (await p.get('orphans'))?.status === 'stopped', 'orphans to be stopped');
      expect(processesWith(marker)).toEqual([]);
    } finally {
      await receiver.close();
    }
  });
});

describe('local workspace provider without a sandbox', () => {
  it('fails permanently when the runner command cannot be started, leaving nothing behind', async () => {
    const p = makeProvider({ sandbox: { kind: 'none' }, command: [path.join(dataDir, 'no-such-binary')] });
    await expect(p.create(defaultSpec('nocmd'))).rejects.toThrow(/could not be started: spawn .*ENOENT/);
    expect(await p.get('nocmd')).toBeNull();
  });
});

describe('baton agent CLI process', () => {
  it('on SIGTERM stops the agent, sends the failed callback and exits 1', async () => {
    const token = 'callback-token-sigterm';
    const receiver = await startCallbackReceiver({ token, runId: 9, failFirst: 1 });
    const work = fs.mkdtempSync(path.join(dataDir, 'ws-'));
    // The contract a Coder template uses: a 0600 file the runner reads and deletes.
    const secretsFile = path.join(dataDir, 'secrets.env');
    fs.writeFileSync(secretsFile, `# written by the workspace template\nCALLBACK_TOKEN=${token}\n`, { mode: 0o600 });
    try {
      const cloneUrl = createBareRepo(dataDir, 'svc');
      const child = spawn(process.execPath, ['--import', TSX, AGENT_CLI], {
        cwd: work,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: {
          PATH: process.env.PATH,
          HOME: work,
          TASK_TYPE: 'develop',
          ISSUE_NUMBER: '3',
          REPO_CLONE_URL: cloneUrl,
          CALLBACK_URL: receiver.callbackUrl,
          BATON_SECRETS_FILE: secretsFile,
          BATON_AGENT_LOG_PORT: '0',
          BATON_AGENT_COMMAND: JSON.stringify([process.execPath, FAKE_CLAUDE]),
          FAKE_CLAUDE_MODE: 'hang',
        },
      });
      let output = '';
      child.stdout.on('data', (d: Buffer) => (output += d.toString()));
      child.stderr.on('data', (d: Buffer) => (output += d.toString()));
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      await until(() => output.includes('[init]'), 'the agent to start');
      expect(fs.existsSync(secretsFile)).toBe(false);
      child.kill('SIGTERM');
      expect(await exited).toBe(1);
      const body = await receiver.accepted();
      expect(body).toMatchObject({ status: 'failed', error: 'runner_terminated' });
      expect(body.summary).toContain('the runner was terminated (SIGTERM');
      expect(receiver.completions).toHaveLength(2);
    } finally {
      await receiver.close();
    }
  });

  it('exits 2 when it cannot report anything, and reports other config problems as a failed run', async () => {
    const { runAgentCommand } = await import('../../src/cli/agent.js');
    expect(await runAgentCommand([], { TASK_TYPE: 'develop' })).toBe(2);

    const receiver = await startCallbackReceiver({ token: 'tok-config-problem', runId: 11, failFirst: 0 });
    try {
      const code = await runAgentCommand([], {
        CALLBACK_URL: receiver.callbackUrl,
        CALLBACK_TOKEN: 'tok-config-problem',
        BATON_TOKEN_CAP: 'lots',
      });
      expect(code).toBe(1);
      const body = await receiver.accepted();
      expect(body).toMatchObject({ status: 'failed', error: 'runner_misconfigured' });
      expect(body.summary).toBe(
        'the runner is misconfigured: TASK_TYPE is not set (the stage to run, e.g. develop); BATON_TOKEN_CAP must be a whole number >= 0, got "lots"',
      );
    } finally {
      await receiver.close();
    }
  });

  it('still reports a failed run when the runner cannot start at all', async () => {
    const { runAgentCommand } = await import('../../src/cli/agent.js');
    const receiver = await startCallbackReceiver({ token: 'tok-cannot-start', runId: 12, failFirst: 0 });
    try {
      const notADir = path.join(dataDir, 'a-file');
      fs.writeFileSync(notADir, 'x');
      const code = await runAgentCommand([], {
        CALLBACK_URL: receiver.callbackUrl,
        CALLBACK_TOKEN: 'tok-cannot-start',
        TASK_TYPE: 'develop',
        BATON_WORKDIR: notADir,
        BATON_AGENT_LOG_PORT: '0',
      });
      expect(code).toBe(1);
      const body = await receiver.accepted();
      expect(body).toMatchObject({ status: 'failed', error: 'runner_error' });
      expect(body.summary).toMatch(/^the runner failed before the run could start: ENOTDIR/);
    } finally {
      await receiver.close();
    }
  });
});
