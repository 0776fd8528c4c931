import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runAgent } from '../../src/agent/index.js';
import { startCallbackReceiver, type CallbackReceiver } from '../fakes/agent/callback-receiver.js';
import { createBareRepo } from '../fakes/agent/git-repos.js';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const binDir = path.join(repoRoot, 'node_modules', '.bin');
const claudeBin = path.join(binDir, 'claude');
const missing = !fs.existsSync(claudeBin);
const required = process.env.CI === 'true';
if (missing && !required) {
  console.warn(
    `SKIPPED: runner tests with the real Claude Code CLI: ${claudeBin} not found. ` +
      'Install the devDependency @anthropic-ai/claude-code (npm install) to run them; under CI=true they fail instead.',
  );
}

describe.skipIf(missing && !required)('runner with the real Claude Code CLI (@anthropic-ai/claude-code)', () => {
  let root: string;
  let receiver: CallbackReceiver;

  beforeEach(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-real-claude-'));
    receiver = await startCallbackReceiver({ token: 'real-claude-callback-token' });
  });

  afterEach(async () => {
    await receiver.close();
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('without credentials reports a clean failure naming the login problem', async () => {
    if (missing)
      throw new Error(
        `CI=true but the Claude Code CLI is not installed at ${claudeBin}: run npm ci (devDependency @anthropic-ai/claude-code)`,
      );
    const home = path.join(root, 'home');
    fs.mkdirSync(home);
    const outcome = await runAgent({
      stage: 'analyse',
      issueNumber: '1',
      cloneUrl: createBareRepo(root, 'app'),
      workdir: fs.mkdtempSync(path.join(root, 'ws-')),
      callbackUrl: receiver.callbackUrl,
      callbackToken: 'real-claude-callback-token',
      // The default command (`claude -p --output-format stream-json --verbose
      // --dangerously-skip-permissions …`) resolved on PATH, with no credentials at all.
      env: {
        PATH: `${binDir}${path.delimiter}${process.env.PATH ?? ''}`,
        HOME: home,
        XDG_CONFIG_HOME: path.join(home, '.config'),
        ANTHROPIC_API_KEY: 'must-be-removed-by-the-runner',
        // Claude Code refuses --dangerously-skip-permissions as root outside a declared sandbox;
        // a test machine running as root is one.
        ...(process.getuid?.() === 0 ? { IS_SANDBOX: '1' } : {}),
      },
      maxDurationMs: 120_000,
      callbackRetryBaseMs: 10,
      progressIntervalMs: 100,
    });

    const body = await receiver.accepted();
    expect(body).toMatchObject({ status: 'failed', exitCode: 1, error: 'agent_auth_failed', costUsd: 0 });
    expect(body.summary).toMatch(/^agent reported an error: Not logged in/);
    expect(outcome.callbackDelivered).toBe(true);
    const log = fs.readFileSync(outcome.logFile, 'utf8');
    expect(log).toContain('[init] model');
    expect(log).toContain('[assistant error] authentication_failed');
  }, 150_000);

  it('takes every prompt the runner passes as a prompt: a leading "-" or "/", allowed-tools, a model', async () => {
    if (missing) throw new Error(`CI=true but the Claude Code CLI is not installed at ${claudeBin}`);
    const home = path.join(root, 'home');
    fs.mkdirSync(home);
    const commands = [
      '- first read issue $ARGUMENTS\n',
      '/nosuchcommand for issue $ARGUMENTS\n',
      '---\nallowed-tools: Bash(git status:*), Read\nmodel: sonnet\n---\nLook at issue $ARGUMENTS.\n',
    ];
    for (const [i, command] of commands.entries()) {
      const outcome = await runAgent({
        stage: 'analyse',
        issueNumber: '1',
        cloneUrl: createBareRepo(root, `app-${i}`, { develop: { '.claude/commands/analyse.md': command } }),
        workdir: fs.mkdtempSync(path.join(root, 'ws-')),
        callbackUrl: receiver.callbackUrl,
        callbackToken: 'real-claude-callback-token',
        env: {
          PATH: `${binDir}${path.delimiter}${process.env.PATH ?? ''}`,
          HOME: home,
          XDG_CONFIG_HOME: path.join(home, '.config'),
          ...(process.getuid?.() === 0 ? { IS_SANDBOX: '1' } : {}),
        },
        callbackRetryBaseMs: 10,
      });
      // Accepted as a prompt and sent on to the API, which it cannot reach without credentials:
      // not an unknown option (exit 1, no stream) and not an unknown command (zero turns).
      expect(outcome, command).toMatchObject({ status: 'failed', error: 'agent_auth_failed', exitCode: 1 });
      expect(outcome.summary).toBe('agent reported an error: Not logged in · Please run /login');
    }
  }, 150_000);

  // Only root is refused; as another user the CLI would start and this case does not exist.
  it.skipIf(process.getuid?.() !== 0)(
    'as root without IS_SANDBOX explains why the CLI refused to start',
    async () => {
      if (missing) throw new Error(`CI=true but the Claude Code CLI is not installed at ${claudeBin}`);
      await runAgent({
        stage: 'analyse',
        issueNumber: '1',
        // No allowed-tools, so the runner skips permissions (the built-in templates pre-approve tools).
        cloneUrl: createBareRepo(root, 'app', { develop: { '.claude/commands/analyse.md': 'Analyse issue $ARGUMENTS.\n' } }),
        workdir: fs.mkdtempSync(path.join(root, 'ws-')),
        callbackUrl: receiver.callbackUrl,
        callbackToken: 'real-claude-callback-token',
        env: { PATH: `${binDir}${path.delimiter}${process.env.PATH ?? ''}`, HOME: root },
        callbackRetryBaseMs: 10,
      });
      const body = await receiver.accepted();
      expect(body).toMatchObject({ status: 'failed', exitCode: 1, error: 'no_result' });
      expect(body.summary).toContain('--dangerously-skip-permissions cannot be used with root/sudo privileges');
      expect(body.summary).toContain('set IS_SANDBOX=1');
    },
    150_000,
  );
});
