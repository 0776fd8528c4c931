import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { startCallbackReceiver, type CallbackReceiver } from '../fakes/agent/callback-receiver.js';
import { createBareRepo } from '../fakes/agent/git-repos.js';

/**
 * Without the nested sandbox (`local.sandbox: none`, or the Coder template's nested_sandbox off)
 * the agent runs as its runner's uid, and a process may read the memory and environment of any
 * dumpable process of its uid: the runner's callback token with it. The runner makes itself
 * undumpable and keeps SIGUSR1 from opening Node's inspector. Real processes: the runner from
 * source, as a user that is not root (root may read any process), and a spy as its agent.
 */

const SPY = fileURLToPath(new URL('../fakes/agent/runner-spy.mjs', import.meta.url));
const AGENT_CLI = fileURLToPath(new URL('../fakes/agent/agent-cli.ts', import.meta.url));
const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
/** As root the runner runs as nobody, as a workspace's user would. */
const AS = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : undefined;

interface Report {
  uid: number;
  runner: { pid: number; uid: number; cmdline: string };
  reads: { target: string; ok: boolean; error?: string; found?: boolean }[];
}

let root: string | undefined;
let runner: ChildProcess | undefined;
let receiver: CallbackReceiver | undefined;

afterEach(async () => {
  runner?.kill('SIGKILL');
  await receiver?.close();
  if (root) fs.rmSync(root, { recursive: true, force: true });
  root = runner = receiver = undefined;
});

describe('the runner without a nested sandbox', () => {
  it('keeps its memory and environment from an agent of its own uid, and SIGUSR1 opens no inspector', async () => {
    const token = randomBytes(32).toString('base64url');
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-runner-memory-'));
    fs.chmodSync(root, 0o755);
    const cloneUrl = createBareRepo(root, 'app');
    const home = path.join(root, 'home');
    const work = path.join(root, 'work');
    for (const dir of [home, work]) fs.mkdirSync(dir);
    // The bare repository is this user's; the runner's git must trust it.
    fs.writeFileSync(path.join(home, '.gitconfig'), '[safe]\n\tdirectory = *\n[user]\n\tname = t\n\temail = t@example.invalid\n');
    const secrets = path.join(home, 'secrets');
    fs.writeFileSync(secrets, `CALLBACK_TOKEN=${token}\n`, { mode: 0o600 });
    if (AS) for (const p of [home, work, secrets, path.join(home, '.gitconfig')]) fs.chownSync(p, AS.uid, AS.gid);

    receiver = await startCallbackReceiver({ token, runId: 7, failFirst: 0 });
    let stderr = '';
    runner = spawn(process.execPath, ['--import', TSX, AGENT_CLI], {
      cwd: work,
      env: {
        PATH: process.env.PATH,
        HOME: home,
        TASK_TYPE: 'analyse',
        ISSUE_NUMBER: '1',
        GITEA_REPO: 'app',
        REPO_CLONE_URL: cloneUrl,
        BATON_WORKDIR: work,
        BATON_RUN_ID: '7',
        CALLBACK_URL: receiver.callbackUrl,
        BATON_AGENT_LOG_PORT: '0',
        BATON_SECRETS_FILE: secrets,
        BATON_AGENT_COMMAND: JSON.stringify([process.execPath, SPY]),
      },
      stdio: ['ignore', 'ignore', 'pipe'],
      ...AS,
    });
    runner.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));

    const outcome = await receiver.accepted();
    expect(outcome, stderr).toMatchObject({ status: 'succeeded' });
    const report = JSON.parse(String(outcome.summary)) as Report;

    // The spy is the runner's child and of its uid, not root: nothing but dumpability stands between them.
    expect(report.runner.pid).toBe(runner.pid);
    expect(report.runner.cmdline).toContain('agent-cli.ts');
    expect(report.uid).toBe(report.runner.uid);
    expect(report.uid).not.toBe(0);

    const read = (target: string) => report.reads.find((r) => r.target === target);
    expect(read(`/proc/${runner.pid}/environ`)).toEqual({ target: `/proc/${runner.pid}/environ`, ok: false, error: 'EACCES' });
    expect(read(`/proc/${runner.pid}/mem`)).toEqual({ target: `/proc/${runner.pid}/mem`, ok: false, error: 'EACCES' });
    // The control: the same reads of a dumpable process of the same uid work, and find what is there.
    const control = report.reads.filter((r) => !r.target.startsWith(`/proc/${runner!.pid}/`));
    expect(control).toEqual([
      expect.objectContaining({ ok: true, found: true, target: expect.stringMatching(/environ$/) }),
      expect.objectContaining({ ok: true, found: true, target: expect.stringMatching(/mem$/) }),
    ]);
    // SIGUSR1 did not open the inspector (Node says so on stderr when it does), and the runner says the sandbox is off.
    expect(stderr).not.toContain('Debugger listening');
    expect(stderr).toContain('the nested sandbox is off (BATON_SANDBOX is unset)');
    expect(stderr).toContain('not its memory (the runner is undumpable)');
  });
});
