/**
 * The README's "Try it in five minutes", run exactly as written: its shell blocks are taken from
 * the README itself, the first (terminal 1, ending in `npx baton serve`) in the background, the
 * second (terminal 2) once baton answers. What stands in for the person's machine is only the
 * environment: a home directory with a `claude` login file, the fake agent in place of `claude`
 * (`BATON_AGENT_COMMAND`), a free port instead of 3000, and npm kept offline. Runs are sandboxed
 * with the real bubblewrap, as the README says.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { git } from '../fakes/agent/git-repos.js';
import { assertBuilt, freePort } from '../helpers/baton-bin.js';
import { CHROMIUM, launchChromium, submitToken } from '../helpers/browser.js';
import { REPO_ROOT } from '../helpers/child.js';
import { until } from '../helpers/until.js';

const README = fs.readFileSync(path.join(REPO_ROOT, 'README.md'), 'utf8');
const FAKE_CLAUDE = path.join(REPO_ROOT, 'test/fakes/agent/fake-claude.mjs');
const DEMO = path.join(REPO_ROOT, 'demo');

/** The ```sh blocks of the README section with this heading, in order. */
function shellBlocks(heading: string): string[] {
  const start = README.indexOf(`## ${heading}\n`);
  if (start < 0) throw new Error(`README has no "## ${heading}" section`);
  const end = README.indexOf('\n## ', start + 3);
  const section = README.slice(start, end < 0 ? undefined : end);
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

interface Shell {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
  /** Every process that held its output (npx, baton) is gone. */
  closed: Promise<void>;
}

function shell(script: string, env: Record<string, string>): Shell {
  // Its own process group, so the background terminal (npx, then baton) can be stopped whole.
  const child = spawn('bash', ['-e', '-c', script], { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  return { child, output: () => output, exited, closed };
}

describe('README: try it in five minutes', { timeout: 180_000 }, () => {
  const blocks = shellBlocks('Try it in five minutes');
  let home: string;
  let env: Record<string, string>;
  let port: number;
  let terminal1: Shell | undefined;
  /** Only a demo/ this test made is removed afterwards, never one that was there before. */
  let ownsDemo = false;

  beforeAll(async () => {
    assertBuilt();
    if (fs.existsSync(DEMO)) {
      throw new Error(`${DEMO} exists: this test runs the README's demo there; move your own demo/ away first`);
    }
    ownsDemo = true;
    // Runs are sandboxed as nobody when tests run as root: the login file must be reachable by it.
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-home-'));
    fs.chmodSync(home, 0o755);
    fs.mkdirSync(path.join(home, '.claude'), { mode: 0o755 });
    fs.writeFileSync(path.join(home, '.claude', '.credentials.json'), '{"claudeAiOauth":{}}\n', { mode: 0o644 });
    port = await freePort();
    env = {
      PATH: process.env.PATH ?? '',
      HOME: home,
      PORT: String(port),
      BATON_URL: `http://127.0.0.1:${port}`,
      // The fake agent in place of claude: it parses its arguments and answers as Claude Code does.
      BATON_AGENT_COMMAND: JSON.stringify([FAKE_CLAUDE]),
      npm_config_offline: 'true',
      npm_config_update_notifier: 'false',
    };
  });

  afterAll(async () => {
    if (terminal1?.child.pid !== undefined) {
      try {
        process.kill(-terminal1.child.pid, 'SIGTERM');
      } catch {
        // The whole group is gone already.
      }
      await terminal1.closed;
    }
    if (ownsDemo) fs.rmSync(DEMO, { recursive: true, force: true });
    if (home) fs.rmSync(home, { recursive: true, force: true });
  });

  it('has the two terminals of the walk-through', () => {
    expect(blocks).toHaveLength(2);
    expect(blocks[0]).toMatch(/npx baton serve\n$/);
    expect(blocks[1]).toMatch(/npx baton logs 1 --follow\n$/);
  });

  it('runs a stage on a declared local repository in the sandbox, shown by baton logs --follow and on the dashboard', async () => {
    terminal1 = shell(blocks[0]!, env);
    const t1 = terminal1;
    await until(
      async () => {
        if (t1.child.exitCode !== null) throw new Error(`terminal 1 ended with ${t1.child.exitCode}:\n${t1.output()}`);
        return fetch(`http://127.0.0.1:${port}/health`).then(
          (r) => r.ok,
          () => false,
        );
        // npx runs the package's prepare script (a full tsc build) before baton starts.
      },
      'baton serve from the README to answer',
      150_000,
    );
    const head = git(path.join(DEMO, 'hello'), 'rev-parse', 'HEAD');

    const terminal2 = shell(blocks[1]!, env);
    const code = await terminal2.exited;
    const output = terminal2.output();
    expect(code, `terminal 2:\n${output}\nterminal 1:\n${t1.output()}`).toBe(0);
    expect(output).toContain('run #1 queued: explore demo/hello');
    // The runner cloned the declared repository, took its own prompt and the --arg for $ARGUMENTS.
    expect(output).toContain('[baton] prompt from .claude/commands/explore.md');
    expect(output).toContain('Working on: Read this repository and suggest what to build first. Focus: a command-line tool');
    expect(output).toMatch(/run #1 succeeded/);
    // Runs read the declared repository; they cannot change it.
    expect(git(path.join(DEMO, 'hello'), 'rev-parse', 'HEAD')).toBe(head);
    expect(git(path.join(DEMO, 'hello'), 'status', '--porcelain')).toBe('');

    if (fs.existsSync(CHROMIUM)) {
      const browser = await launchChromium();
      try {
        const page = await browser.newPage();
        await submitToken(page, `http://127.0.0.1:${port}/`, fs.readFileSync(path.join(DEMO, 'admin.token'), 'utf8').trim());
        const row = page.locator('#runs tr[data-run-id="1"]');
        await expect.poll(() => row.locator('.status').textContent(), { timeout: 15_000, interval: 50 }).toBe('succeeded');
        expect(await row.textContent()).toContain('demo/hello');
      } finally {
        await browser.close();
      }
    }

    // Ctrl-C in terminal 1: baton stops gracefully.
    process.kill(-t1.child.pid!, 'SIGINT');
    await t1.closed;
    expect(t1.output()).toMatch(/"msg":"stopped"/);
  });
});
