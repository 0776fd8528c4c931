import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runAgent } from '../../src/agent/index.js';
import { startCallbackReceiver, type CallbackReceiver } from '../fakes/agent/callback-receiver.js';
import { createBareRepo, git } from '../fakes/agent/git-repos.js';
import {
  CALLBACK_TOKEN as TOKEN,
  createRunnerFixture,
  GITEA_TOKEN,
  OAUTH_TOKEN as OAUTH,
  type RunnerFixture,
} from '../fakes/agent/runner-fixture.js';

let fixture: RunnerFixture;
let root: string;
let receiver: CallbackReceiver;
const options: RunnerFixture['options'] = (mode, overrides) => fixture.options(mode, overrides);
const readRecord = (file: string) => fixture.readRecord(file);

beforeEach(async () => {
  fixture = await createRunnerFixture();
  ({ root, receiver } = fixture);
});

afterEach(() => fixture.close());

describe('runAgent with the fake Claude Code CLI', () => {
  it('runs the repository prompt on develop and reports success after the server answered 500 twice', async () => {
    const opts = options('success');
    const outcome = await runAgent(opts);

    const body = await receiver.accepted();
    expect(receiver.completions).toHaveLength(3);
    expect(receiver.completions.every((c) => c.authorization === `Bearer ${TOKEN}`)).toBe(true);
    expect(body).toMatchObject({
      status: 'succeeded',
      exitCode: 0,
      summary: 'Finished the task for: Implement issue #42 on the develop branch.',
      // Summed over both models of modelUsage, not the main-loop `usage`.
      usage: { inputTokens: 305, outputTokens: 61, cacheReadInputTokens: 150, cacheCreationInputTokens: 10 },
      costUsd: 0.0124,
    });
    expect(typeof body.durationMs).toBe('number');
    expect(body.error).toBeUndefined();
    expect(outcome.callbackDelivered).toBe(true);

    const record = readRecord(opts.record);
    expect(record.prompt).toBe('Implement issue #42 on the develop branch.\n\nThen post a summary on issue 42.');
    expect(record.hasAnthropicApiKey).toBe(false);
    expect(record.hasCallbackToken).toBe(false);
    expect(record.oauthToken).toBe(OAUTH);
    expect(git(record.cwd, 'rev-parse', '--abbrev-ref', 'HEAD')).toBe('develop');

    const progressLines = receiver.progress.flatMap((p) => p.body.lines as string[]);
    expect(progressLines).toContain('[assistant] All done.');
    expect(progressLines.some((l) => l.startsWith('[tool] Bash'))).toBe(true);
    expect(receiver.progress.every((p) => p.authorization === `Bearer ${TOKEN}`)).toBe(true);
    // The prompt the agent got is reported once, for the run page.
    const prompts = receiver.progress.map((p) => p.body.prompt).filter(Boolean);
    expect(prompts).toEqual([
      {
        text: record.prompt,
        arguments: '42',
        source: 'repository',
        file: '.claude/commands/develop.md',
        model: null,
      },
    ]);
    const log = fs.readFileSync(outcome.logFile, 'utf8');
    expect(log).toContain('[result] subtype success');
    expect(outcome.logFile).toBe(path.join(opts.workdir, '.baton', 'agent.log'));
  });

  it('falls back to the remote default branch and to the built-in prompt', async () => {
    const cloneUrl = createBareRepo(root, 'no-develop', { develop: null });
    const assetsDir = path.join(root, 'assets');
    fs.mkdirSync(path.join(assetsDir, 'commands'), { recursive: true });
    fs.writeFileSync(path.join(assetsDir, 'commands', 'analyse.md'), '---\ndescription: x\n---\nBuilt-in analysis of issue $ARGUMENTS\n');
    const opts = options('success', { cloneUrl, stage: 'analyse', assetsDir });
    await runAgent(opts);
    const body = await receiver.accepted();
    expect(body.status).toBe('succeeded');
    const record = readRecord(opts.record);
    expect(record.prompt).toBe('Built-in analysis of issue 42');
    expect(git(record.cwd, 'rev-parse', '--abbrev-ref', 'HEAD')).toBe('main');
  });

  it('uses the shipped built-in template when the repository has no command file', async () => {
    const cloneUrl = createBareRepo(root, 'plain');
    const opts = options('success', { cloneUrl, stage: 'architect' });
    await runAgent(opts);
    expect((await receiver.accepted()).status).toBe('succeeded');
    const record = readRecord(opts.record);
    expect(record.prompt).toContain('42');
    expect(record.prompt).not.toMatch(/^---/);
    expect(record.prompt).not.toContain('$ARGUMENTS');
  });

  it('passes DEPLOY_ENV as $ARGUMENTS for devops', async () => {
    const cloneUrl = createBareRepo(root, 'deploy', { develop: { '.claude/commands/devops.md': 'Deploy to $ARGUMENTS now.\n' } });
    const opts = options('success', { cloneUrl, stage: 'devops', deployEnv: 'staging' });
    await runAgent(opts);
    expect(readRecord(opts.record).prompt).toBe('Deploy to staging now.');
  });

  it.each(['error_during_execution', 'error_max_turns', 'error_max_budget_usd', 'error_max_structured_output_retries'])(
    'reports the %s result subtype as failed with its errors',
    async (subtype) => {
      await runAgent(options(subtype));
      const body = await receiver.accepted();
      expect(body).toMatchObject({
        status: 'failed',
        exitCode: 1,
        summary: `agent stopped with ${subtype} after 10 turns: fake failure: ${subtype}`,
        costUsd: 0.2,
        error: subtype === 'error_max_turns' ? 'agent_turn_limit' : 'agent_error',
      });
      expect(body.usage).toMatchObject({ inputTokens: 305 });
    },
  );

  it('treats subtype success with is_error true as a failure', async () => {
    await runAgent(options('api-error'));
    expect(await receiver.accepted()).toMatchObject({
      status: 'failed',
      exitCode: 1,
      summary: 'agent reported an error (API status 529): API Error: Repeated 529 Overloaded errors',
      costUsd: 0,
      error: 'agent_overloaded',
    });
  });

  it.each([
    ['rate-limited', 'agent_rate_limited'],
    ['legacy-overloaded', 'agent_overloaded'],
    ['connection-error', 'agent_unreachable'],
    ['not-logged-in', 'agent_auth_failed'],
  ])('reports the API failure of %s as the kind baton retries by (%s)', async (mode, kind) => {
    await runAgent(options(mode));
    expect(await receiver.accepted()).toMatchObject({ status: 'failed', exitCode: 1, error: kind });
  });

  it('tolerates garbage, unknown message types and api_retry lines, and keeps them in the log', async () => {
    const outcome = await runAgent(options('noisy-success'));
    expect(await receiver.accepted()).toMatchObject({ status: 'succeeded', summary: 'Noisy but fine.' });
    const log = fs.readFileSync(outcome.logFile, 'utf8');
    expect(log).toContain('this is not json');
    expect(log).toContain('[api retry] attempt 1/10 in 0.5 s status 529: overloaded_error');
    expect(log).toContain('[some_future_type]');
  });

  it('reads cost and usage from an older CLI result (total_cost, no modelUsage)', async () => {
    await runAgent(options('legacy-success'));
    expect(await receiver.accepted()).toMatchObject({
      status: 'succeeded',
      summary: 'Legacy done.',
      costUsd: 0.5,
      usage: { inputTokens: 11, outputTokens: 7, cacheReadInputTokens: 3, cacheCreationInputTokens: 2 },
    });
  });

  it('fails when the output has no result message', async () => {
    await runAgent(options('garbage'));
    expect(await receiver.accepted()).toMatchObject({
      status: 'failed',
      exitCode: 0,
      summary: 'agent output had no result message (exit code 0)',
      error: 'no_result',
    });
  });

  it('fails when the agent prints nothing', async () => {
    await runAgent(options('no-output'));
    expect(await receiver.accepted()).toMatchObject({ status: 'failed', summary: 'agent output had no result message (exit code 0)' });
  });

  it('reports a crash mid-stream with its exit code and last stderr line', async () => {
    await runAgent(options('crash'));
    const body = await receiver.accepted();
    expect(body).toMatchObject({
      status: 'failed',
      exitCode: 1,
      summary: 'agent output had no result message (exit code 1); last stderr line: FATAL: fake crash in the middle of the stream',
    });
    // Tokens seen before the crash are still reported.
    expect(body.usage).toMatchObject({ inputTokens: 10, outputTokens: 5 });
  });

  it('ends a hanging agent at the maximum duration as timed_out', async () => {
    await runAgent(options('hang', { maxDurationMs: 4_000 }));
    expect(await receiver.accepted()).toMatchObject({
      status: 'timed_out',
      exitCode: null,
      summary: 'agent exceeded the 4 s maximum duration',
      error: 'max_duration',
    });
  });

  it('SIGKILLs an agent that ignores SIGTERM after the grace period', async () => {
    const controller = new AbortController();
    const opts = options('hang-ignore-term', {
      killGraceMs: 300,
      signal: controller.signal,
      // The fake installs its SIGTERM handler before printing init: stop only once it is up.
      onLogLine: (line) => {
        if (line.startsWith('[init]')) controller.abort();
      },
    });
    const outcome = await runAgent(opts);
    expect(outcome.status).toBe('failed');
    expect(outcome.error).toBe('runner_terminated');
    expect(fs.readFileSync(outcome.logFile, 'utf8')).toContain('ignoring SIGTERM');
    expect(fs.readFileSync(outcome.logFile, 'utf8')).toContain('agent exited by signal SIGKILL');
  });

  it('stops the agent at the token cap', async () => {
    await runAgent(options('token-overrun', { tokenCap: 200_000 }));
    const body = await receiver.accepted();
    expect(body).toMatchObject({ status: 'failed', error: 'token_cap' });
    expect(body.summary).toMatch(/^agent used [\d,]+ tokens, over the token cap of 200,000; it was stopped$/);
    expect((body.usage as { inputTokens: number }).inputTokens).toBeGreaterThan(120_000);
  });

  it('reports a clone failure with the URL and git reason', async () => {
    const missing = path.join(root, 'missing.git');
    await runAgent(options('success', { cloneUrl: missing }));
    const body = await receiver.accepted();
    expect(body).toMatchObject({ status: 'failed', exitCode: null, error: 'clone_failed', usage: null, costUsd: null });
    expect(body.summary).toBe(`clone of ${missing} failed: repository '${missing}' does not exist`);
  });

  it('authenticates an http clone with the forge token and reports a missing repository', async () => {
    const seen: (string | undefined)[] = [];
    // Answers like a forge for a repository that does not exist.
    const forge = http.createServer((req, res) => {
      seen.push(req.headers.authorization);
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Not found\n');
    });
    await new Promise<void>((resolve) => forge.listen(0, '127.0.0.1', resolve));
    try {
      const cloneUrl = `http://127.0.0.1:${(forge.address() as AddressInfo).port}/acme/gone.git`;
      const outcome = await runAgent(options('success', { cloneUrl }));
      const body = await receiver.accepted();
      expect(body).toMatchObject({ status: 'failed', error: 'clone_failed' });
      expect(body.summary).toBe(`clone of ${cloneUrl} failed: repository '${cloneUrl}/' not found`);
      expect(seen).toContain(`Basic ${Buffer.from(`${GITEA_TOKEN}:x-oauth-basic`).toString('base64')}`);
      expect(fs.readFileSync(outcome.logFile, 'utf8')).not.toContain(Buffer.from(`${GITEA_TOKEN}:x-oauth-basic`).toString('base64'));
    } finally {
      forge.closeAllConnections();
      await new Promise<void>((resolve) => forge.close(() => resolve()));
    }
  });

  it('reports a command file with unterminated front matter', async () => {
    const cloneUrl = createBareRepo(root, 'broken', {
      develop: { '.claude/commands/develop.md': '---\ndescription: oops\nDo the thing\n' },
    });
    await runAgent(options('success', { cloneUrl }));
    const body = await receiver.accepted();
    expect(body).toMatchObject({ status: 'failed', error: 'command_file_invalid' });
    expect(body.summary).toContain('.claude/commands/develop.md: the front matter opened with "---" on line 1 is never closed');
  });

  it('reports an unknown stage without a command file', async () => {
    await runAgent(options('success', { stage: 'security-audit' }));
    const body = await receiver.accepted();
    expect(body.summary).toContain('has no .claude/commands/security-audit.md');
  });

  it('runs install and build commands on heavy stages and reports a failing one', async () => {
    const opts = options('success', { installCommand: 'echo installed > .install-marker', buildCommand: 'echo compiling; exit 3' });
    await runAgent(opts);
    const body = await receiver.accepted();
    expect(body).toMatchObject({
      status: 'failed',
      error: 'setup_failed',
      summary: 'build command `echo compiling; exit 3` failed with exit code 3: compiling',
    });
    expect(fs.existsSync(path.join(opts.workdir, 'app', '.install-marker'))).toBe(true);
  });

  it('skips install and build commands on light stages', async () => {
    const opts = options('success', { stage: 'analyse', installCommand: 'exit 9' });
    await runAgent(opts);
    expect((await receiver.accepted()).status).toBe('succeeded');
  });

  it('lets the server mark a stage heavy or light, over the built-in table', async () => {
    const custom = options('success', { stage: 'analyse', heavy: true, installCommand: 'echo installed > .install-marker' });
    await runAgent(custom);
    expect((await receiver.accepted()).status).toBe('succeeded');
    expect(fs.existsSync(path.join(custom.workdir, 'app', '.install-marker'))).toBe(true);
  });

  it('runs another CLI agent through a command template with plain-text output', async () => {
    const opts = options('success', {
      agentCommand: [process.execPath, '-e', 'console.log("did: " + process.argv[1].split("\\n")[0])', '{prompt}'],
      outputFormat: 'text',
    });
    await runAgent(opts);
    expect(await receiver.accepted()).toMatchObject({ status: 'succeeded', summary: 'did: Implement issue #42 on the develop branch.' });
  });

  it('reports an agent command that cannot be started', async () => {
    await runAgent(options('success', { agentCommand: [path.join(root, 'no-such-agent')] }));
    const body = await receiver.accepted();
    expect(body).toMatchObject({ status: 'failed', error: 'agent_not_started', exitCode: null });
    expect(body.summary).toContain('could not be started');
  });

  it('serves the live log, and on abort (runner SIGTERM) stops the agent and reports failure', async () => {
    const controller = new AbortController();
    let logUrl = '';
    const opts = options('hang', {
      signal: controller.signal,
      logServer: { port: 0 },
      onLogServerListening: (url) => {
        logUrl = url;
      },
    });
    const running = runAgent(opts);
    // Wait until the agent is up (its init line reached the server as progress).
    await expect
      .poll(() => receiver.progress.some((p) => (p.body.lines as string[]).some((l) => l.startsWith('[init]'))), { timeout: 10_000 })
      .toBe(true);
    const page = await fetch(`${logUrl}/`);
    expect(page.headers.get('content-type')).toContain('text/html');
    expect(await page.text()).toContain('[init] model claude-fake-1');
    const text = await (await fetch(`${logUrl}/log.txt`)).text();
    expect(text).toContain('[baton] starting agent');
    expect(text).not.toContain(GITEA_TOKEN);

    controller.abort();
    const outcome = await running;
    expect(outcome).toMatchObject({ status: 'failed', error: 'runner_terminated', callbackDelivered: true });
    expect(outcome.summary).toContain('the runner was terminated (SIGTERM');
    await expect(fetch(`${logUrl}/log.txt`)).rejects.toThrow();
  });

  it('masks tokens the agent prints', async () => {
    const opts = options('success', {
      agentCommand: [process.execPath, '-e', 'console.log("token is " + process.env.GITEA_TOKEN)'],
      outputFormat: 'text',
    });
    const outcome = await runAgent(opts);
    const body = await receiver.accepted();
    expect(body.summary).toBe('token is ***');
    expect(fs.readFileSync(outcome.logFile, 'utf8')).not.toContain(GITEA_TOKEN);
    expect(JSON.stringify(receiver.progress)).not.toContain(GITEA_TOKEN);
  });
});

describe('completion delivery', () => {
  it('retries a refused callback (401), then says so loudly and keeps the result in the workspace', async () => {
    const refusing = await startCallbackReceiver({ token: TOKEN, fixedStatus: 401, runId: 7 });
    try {
      const outcome = await runAgent(options('success', { callbackUrl: refusing.callbackUrl, callbackMaxRetryMs: 200 }));
      expect(outcome.status).toBe('succeeded');
      expect(outcome.callbackDelivered).toBe(false);
      expect(refusing.completions.length).toBeGreaterThan(1);
      expect(fs.readFileSync(outcome.logFile, 'utf8')).toContain('ERROR: the completion callback was not delivered (HTTP 401');
      const record = JSON.parse(fs.readFileSync(path.join(path.dirname(outcome.logFile), 'undelivered-completion.json'), 'utf8')) as {
        body: { status: string; summary: string };
        lastStatus: number;
      };
      expect(record).toMatchObject({ body: { status: 'succeeded', summary: outcome.summary }, lastStatus: 401 });
      expect(JSON.stringify(record)).not.toContain(TOKEN);
    } finally {
      await refusing.close();
    }
  });

  it('gives up after the retry budget when the server keeps failing', async () => {
    const failing = await startCallbackReceiver({ token: TOKEN, fixedStatus: 503, runId: 8 });
    try {
      const outcome = await runAgent(options('success', { callbackUrl: failing.callbackUrl, callbackMaxRetryMs: 200 }));
      expect(outcome.callbackDelivered).toBe(false);
      expect(failing.completions.length).toBeGreaterThan(1);
    } finally {
      await failing.close();
    }
  });
});
