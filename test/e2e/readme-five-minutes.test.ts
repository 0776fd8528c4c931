/**
 * The README's "Try it in five minutes", run exactly as written: its shell blocks are taken from
 * the README itself, the first (terminal 1, ending in `npx baton serve`) in the background, the
 * second (terminal 2) once baton answers. What stands in for the person's machine is only the
 * environment: a home directory with a `claude` login file, the fake agent in place of `claude`
 * (`BATON_AGENT_COMMAND`), a free port instead of 3000, and npm kept offline. Runs are sandboxed
 * with the real bubblewrap, as the README says.
 *
 * It runs in a copy of the checkout, as a fresh clone has it: whatever the person running the
 * tests did in theirs (this very demo, `npm start`) changes nothing here. And after the demo and
 * the Quick start's `npm start`, the suites that read the working directory still pass there.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { git } from '../fakes/agent/git-repos.js';
import { assertBuilt, freePort } from '../helpers/baton-bin.js';
import { CHROMIUM, launchChromium, submitToken } from '../helpers/browser.js';
import { copyCheckout, type CheckoutCopy } from '../helpers/checkout-copy.js';
import { REPO_ROOT } from '../helpers/child.js';
import { REFERENCE_DIR } from '../helpers/reference.js';
import { until } from '../helpers/until.js';

const README = fs.readFileSync(path.join(REPO_ROOT, 'README.md'), 'utf8');
const FAKE_CLAUDE = path.join(REPO_ROOT, 'test/fakes/agent/fake-claude.mjs');
/**
 * The suites that read what is in the working directory (./baton.yaml, ./data): they must pass
 * whatever a user's earlier commands left there. Only these, not the whole suite, to keep CI short.
 */
const CWD_SENSITIVE_SUITES = ['test/integration/baton-connect.test.ts', 'test/integration/cli-init.test.ts', 'test/e2e/serve.test.ts'];

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

function shell(script: string, env: Record<string, string>, cwd: string): Shell {
  // Its own process group, so the background terminal (npx, then baton) can be stopped whole.
  const child = spawn('bash', ['-e', '-c', script], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  return { child, output: () => output, exited, closed };
}

/** Stops a terminal's whole process group (npx, npm, baton) and waits for it to be gone. */
async function stopShell(terminal: Shell | undefined, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (terminal?.child.pid === undefined) return;
  try {
    process.kill(-terminal.child.pid, signal);
  } catch {
    // The whole group is gone already.
  }
  await terminal.closed;
}

/** Waits until the terminal's baton answers /health, failing early if the terminal ended. */
async function untilServing(terminal: Shell, port: number, what: string): Promise<void> {
  await until(
    async () => {
      if (terminal.child.exitCode !== null) throw new Error(`${what} ended with ${terminal.child.exitCode}:\n${terminal.output()}`);
      return fetch(`http://127.0.0.1:${port}/health`).then(
        (r) => r.ok,
        () => false,
      );
      // npx and npm start run the package's prepare script (a full tsc build) before baton starts.
    },
    `${what} to answer`,
    150_000,
  );
}

describe('README: try it in five minutes', { timeout: 240_000 }, () => {
  const blocks = shellBlocks('Try it in five minutes');
  let checkout: CheckoutCopy;
  let demo: string;
  let home: string;
  let env: Record<string, string>;
  let port: number;
  let terminal1: Shell | undefined;
  let quickStart: Shell | undefined;

  beforeAll(async () => {
    assertBuilt();
    checkout = copyCheckout();
    demo = path.join(checkout.root, 'demo');
    // A home as a user has it: the login file of `claude` is the user's alone (0600, in a 0700
    // home). When the tests run as root, runs are another uid, and must still get the login.
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-home-'));
    fs.chmodSync(home, 0o700);
    fs.mkdirSync(path.join(home, '.claude'), { mode: 0o700 });
    fs.writeFileSync(path.join(home, '.claude', '.credentials.json'), '{"claudeAiOauth":{}}\n', { mode: 0o600 });
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
    await stopShell(terminal1);
    await stopShell(quickStart);
    checkout?.remove();
    if (home) fs.rmSync(home, { recursive: true, force: true });
  });

  it('has the two terminals of the walk-through', () => {
    expect(blocks).toHaveLength(2);
    expect(blocks[0]).toMatch(/npx baton serve\n$/);
    expect(blocks[1]).toMatch(/npx baton logs 1 --follow\n$/);
  });

  it('runs a stage on a declared local repository in the sandbox, shown by baton logs --follow and on the dashboard', async () => {
    terminal1 = shell(blocks[0]!, env, checkout.root);
    const t1 = terminal1;
    await untilServing(t1, port, 'baton serve from the README');
    const head = git(path.join(demo, 'hello'), 'rev-parse', 'HEAD');

    const terminal2 = shell(blocks[1]!, env, checkout.root);
    const code = await terminal2.exited;
    const output = terminal2.output();
    expect(code, `terminal 2:\n${output}\nterminal 1:\n${t1.output()}`).toBe(0);
    expect(output).toContain('run #1 queued: explore demo/hello');
    // The runner cloned the declared repository, took its own prompt and the --arg for $ARGUMENTS.
    expect(output).toContain('[baton] prompt from .claude/commands/explore.md');
    expect(output).toContain('Working on: Read this repository and suggest what to build first. Focus: a command-line tool');
    expect(output).toMatch(/run #1 succeeded/);
    // Runs read the declared repository; they cannot change it.
    expect(git(path.join(demo, 'hello'), 'rev-parse', 'HEAD')).toBe(head);
    expect(git(path.join(demo, 'hello'), 'status', '--porcelain')).toBe('');

    if (fs.existsSync(CHROMIUM)) {
      const browser = await launchChromium();
      try {
        const page = await browser.newPage();
        await submitToken(page, `http://127.0.0.1:${port}/`, fs.readFileSync(path.join(demo, 'admin.token'), 'utf8').trim());
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

  it("leaves a checkout where the tests still pass, after the Quick start's npm start too", async () => {
    expect(fs.existsSync(demo), 'the demo ran in this checkout').toBe(true);
    // The Quick start's `npm start`, connected to a forge as docs/gitea.md says: it makes ./data,
    // its database, the first admin token and the generated webhook secret.
    const quickStartPort = await freePort();
    const [, start] = /```sh\nnpm install && (npm start)/.exec(README) ?? [];
    expect(start, 'the Quick start runs npm start').toBe('npm start');
    quickStart = shell(
      start!,
      {
        ...env,
        PORT: String(quickStartPort),
        GITEA_URL: 'http://127.0.0.1:9',
        GITEA_DEV_TOKEN: 'dev-token-of-the-demo',
        GITEA_REVIEW_TOKEN: 'review-token-of-the-demo',
      },
      checkout.root,
    );
    await untilServing(quickStart, quickStartPort, 'npm start');
    // /health answers from the first moment; the token is minted once the database is migrated.
    const files = ['baton.db', 'first-admin-token', 'webhook-secret'];
    await until(() => files.every((file) => fs.existsSync(path.join(checkout.root, 'data', file))), `./data/{${files.join(',')}}`);
    await stopShell(quickStart, 'SIGINT');

    const tests = shell(
      `npx vitest run --maxWorkers=1 ${CWD_SENSITIVE_SUITES.join(' ')}`,
      {
        PATH: process.env.PATH ?? '',
        HOME: home,
        BATON_REFERENCE_DIR: REFERENCE_DIR,
        ...(process.env.CI ? { CI: process.env.CI } : {}),
        ...(process.env.TEST_DATABASE_URL ? { TEST_DATABASE_URL: process.env.TEST_DATABASE_URL } : {}),
      },
      checkout.root,
    );
    const code = await tests.exited;
    await tests.closed;
    expect(code, tests.output()).toBe(0);
  });
});
