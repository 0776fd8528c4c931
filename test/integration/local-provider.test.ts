import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLocalProvider, PermanentWorkspaceError, type WorkspaceProvider } from '../../src/workspaces/index.js';
import { defaultSpec } from '../conformance/workspace-provider.js';
import { startCallbackReceiver } from '../fakes/agent/callback-receiver.js';
import { createBareRepo } from '../fakes/agent/git-repos.js';

const FAKE_CLAUDE = fileURLToPath(new URL('../fakes/agent/fake-claude.mjs', import.meta.url));
const AGENT_CLI = fileURLToPath(new URL('../fakes/agent/agent-cli.ts', import.meta.url));
const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

let dataDir: string;
const providers: WorkspaceProvider[] = [];
const provider = (options: Partial<Parameters<typeof createLocalProvider>[0]> = {}) => {
  const p = createLocalProvider({
    dataDir,
    // The fake CLI as a stand-in runner; it parses its arguments as Claude Code does, so it needs -p.
    command: [process.execPath, FAKE_CLAUDE, '-p', '--output-format', 'stream-json', '--verbose', '--', 'stand-in runner'],
    env: { FAKE_CLAUDE_MODE: 'hang' },
    stopGraceMs: 500,
    ...options,
  });
  providers.push(p);
  return p;
};

beforeEach(() => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-local-'));
});

afterEach(async () => {
  for (const p of providers.splice(0)) {
    for (const w of await p.list()) await p.delete(w.name);
    await p.close?.();
  }
  fs.rmSync(dataDir, { recursive: true, force: true });
});

describe('local workspace provider', () => {
  it('passes the run to the runner as env, logs its output and keeps secrets out of files', async () => {
    const script = 'require("fs").writeFileSync("env.json", JSON.stringify(process.env)); console.log("runner says hi")';
    const p = provider({ command: [process.execPath, '-e', script], env: { CLAUDE_CODE_OAUTH_TOKEN: 'oauth-secret-value' } });
    const spec = {
      ...defaultSpec('env-check'),
      deployEnv: 'staging',
      build: 'heavy' as const,
      skipPermissions: false,
      extra: { BATON_INSTALL_COMMAND: 'npm ci', 'not an env name': 'x' },
    };
    await p.create(spec);
    const dir = path.join(dataDir, 'workspaces', 'env-check');
    await expect.poll(async () => (await p.get('env-check'))?.status, { timeout: 10_000 }).toBe('stopped');
    const env = JSON.parse(fs.readFileSync(path.join(dir, 'env.json'), 'utf8')) as Record<string, string>;
    expect(env).toMatchObject({
      TASK_TYPE: 'develop',
      ISSUE_NUMBER: '7',
      GITEA_URL: 'https://forge.invalid',
      GITEA_ORG: 'acme',
      GITEA_REPO: 'app',
      GITEA_TOKEN: 'forge-token-for-conformance',
      REPO_CLONE_URL: 'https://forge.invalid/acme/app.git',
      DEPLOY_ENV: 'staging',
      CALLBACK_URL: 'http://127.0.0.1:9/api/runs/1/complete',
      CALLBACK_TOKEN: 'callback-token-for-conformance',
      BATON_RUN_ID: '1',
      BATON_MAX_DURATION_MS: '60000',
      BATON_AGENT_LOG_PORT: '0',
      BATON_WORKDIR: dir,
      CLAUDE_CODE_OAUTH_TOKEN: 'oauth-secret-value',
      BATON_INSTALL_COMMAND: 'npm ci',
      BATON_STAGE_BUILD: 'heavy',
      BATON_STAGE_SKIP_PERMISSIONS: 'false',
    });
    expect(env['not an env name']).toBeUndefined();
    // baton's own environment is not inherited wholesale.
    expect(env.VITEST).toBeUndefined();
    expect(fs.readFileSync(path.join(dir, 'runner.log'), 'utf8')).toContain('runner says hi');
    const record = fs.readFileSync(path.join(dir, 'runner.json'), 'utf8');
    for (const secret of ['forge-token-for-conformance', 'callback-token-for-conformance', 'oauth-secret-value']) {
      expect(record).not.toContain(secret);
    }
    // Written when this process reaps the runner, which may come just after it looks stopped.
    await expect.poll(() => fs.existsSync(path.join(dir, 'exit.json')), { timeout: 10_000 }).toBe(true);
    expect(JSON.parse(fs.readFileSync(path.join(dir, 'exit.json'), 'utf8'))).toMatchObject({ code: 0, signal: null });
  });

  it('lets a restarted baton tell live runners from dead ones', async () => {
    const first = provider();
    await first.create(defaultSpec('alive'));
    await expect.poll(async () => (await first.get('alive'))?.status, { timeout: 10_000 }).toBe('running');

    const second = provider();
    expect((await second.get('alive'))?.status).toBe('running');
    await second.stop('alive');
    await expect.poll(async () => (await second.get('alive'))?.status, { timeout: 10_000 }).toBe('stopped');
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
    await expect
      .poll(() => fs.readFileSync(path.join(dataDir, 'workspaces', 'stubborn', 'runner.log'), 'utf8'), { timeout: 10_000 })
      .toContain('"subtype":"init"');
    await p.stop('stubborn');
    expect((await p.get('stubborn'))?.status).toBe('stopping');
    await expect.poll(async () => (await p.get('stubborn'))?.status, { timeout: 10_000 }).toBe('stopped');
  });

  it('rejects names that are not safe directory names', async () => {
    const p = provider();
    await expect(p.create(defaultSpec('../escape'))).rejects.toBeInstanceOf(PermanentWorkspaceError);
    expect(await p.get('../escape')).toBeNull();
  });

  it('fails permanently when the runner command cannot be started, leaving nothing behind', async () => {
    const p = provider({ command: [path.join(dataDir, 'no-such-binary')] });
    await expect(p.create(defaultSpec('nocmd'))).rejects.toThrow(/could not be started: spawn .*ENOENT/);
    expect(await p.get('nocmd')).toBeNull();
  });

  it('runs the real runner end to end: clone, fake agent, completion callback', async () => {
    const token = 'callback-token-end-to-end';
    const receiver = await startCallbackReceiver({ token, runId: 5, failFirst: 0 });
    try {
      const cloneUrl = createBareRepo(dataDir, 'shop');
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
      expect(body).toMatchObject({ status: 'succeeded', exitCode: 0 });
      expect(body.summary).toMatch(/^Finished the task for: /);
      await expect.poll(async () => (await p.get('e2e'))?.status, { timeout: 10_000 }).toBe('stopped');
      expect(fs.existsSync(path.join(dataDir, 'workspaces', 'e2e', 'shop', 'DEVELOP.md'))).toBe(true);
      expect(fs.readFileSync(path.join(dataDir, 'workspaces', 'e2e', 'runner.log'), 'utf8')).not.toContain(token);
    } finally {
      await receiver.close();
    }
  });
});

describe('baton agent CLI process', () => {
  it('on SIGTERM stops the agent, sends the failed callback and exits 1', async () => {
    const token = 'callback-token-sigterm';
    const receiver = await startCallbackReceiver({ token, runId: 9, failFirst: 1 });
    const work = fs.mkdtempSync(path.join(dataDir, 'ws-'));
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
          CALLBACK_TOKEN: token,
          BATON_AGENT_LOG_PORT: '0',
          BATON_AGENT_COMMAND: JSON.stringify([process.execPath, FAKE_CLAUDE]),
          FAKE_CLAUDE_MODE: 'hang',
        },
      });
      let output = '';
      child.stdout.on('data', (d: Buffer) => (output += d.toString()));
      child.stderr.on('data', (d: Buffer) => (output += d.toString()));
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      await expect.poll(() => output, { timeout: 20_000 }).toContain('[init]');
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
