import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createFakeCoder, type FakeCoder } from '../fakes/coder/index.js';
import { createFakeGitea, type FakeGitea } from '../fakes/gitea/index.js';
import { runBaton } from '../helpers/baton-bin.js';
import { REPO_ROOT } from '../helpers/child.js';

const FAKE_CLAUDE = path.join(REPO_ROOT, 'test/fakes/agent/fake-claude.mjs');

/** `baton doctor`'s lines by check name (a check may print several). */
function lines(stdout: string): Array<{ status: string; check: string; text: string }> {
  return stdout
    .split('\n')
    .map((line) => /^(ok|warn|FAIL|info)\s+([^:]+): (.*)$/.exec(line))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ status: m[1]!, check: m[2]!, text: m[3]! }));
}

describe('baton doctor', { timeout: 120_000 }, () => {
  let dir: string;
  let gitea: FakeGitea;
  let tokens: Record<string, string>;

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-doctor-'));
    // Local runs are sandboxed as nobody when tests run as root: the data directory must be traversable.
    fs.chmodSync(dir, 0o711);
    gitea = await createFakeGitea();
    gitea.addRepo('acme', 'app');
    tokens = {
      dev: gitea.addUser('claude-dev').token,
      review: gitea.addUser('claude-review', { scopes: ['read:user', 'read:repository', 'read:issue'] }).token,
      someoneElse: gitea.addUser('ops').token,
    };
    gitea.addCollaborator('acme', 'app', 'claude-dev', 'admin');
    gitea.addCollaborator('acme', 'app', 'claude-review', 'read');
  });
  afterEach(async () => {
    await gitea.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const doctor = (env: Record<string, string>, ...args: string[]) =>
    runBaton(['doctor', ...args], {
      cwd: dir,
      env: { BATON_AGENT_COMMAND: JSON.stringify([FAKE_CLAUDE]), CLAUDE_OAUTH_TOKEN: 'oauth-token-for-tests', ...env },
    });

  it('passes a sound local setup, and checks a local run exactly as /ready does', async () => {
    const result = await doctor(
      {
        GITEA_URL: gitea.url,
        GITEA_DEV_TOKEN: tokens.dev!,
        GITEA_REVIEW_TOKEN: tokens.dev!,
        BOT_REVIEW_USERNAME: 'claude-dev',
        WEBHOOK_SECRET: 'secret-0123456789',
      },
      '--repo',
      'acme/app',
    );
    expect(result.code, result.stdout + result.stderr).toBe(0);
    const found = lines(result.stdout);
    expect(found.filter((l) => l.status === 'FAIL')).toEqual([]);
    expect(found).toContainEqual({
      status: 'ok',
      check: 'bot dev on acme/app',
      text: 'claude-dev can read and comment, and push (scopes read:repository, write:issue)',
    });
    expect(found).toContainEqual(expect.objectContaining({ status: 'ok', check: 'local runs' }));
    expect(found).toContainEqual(
      expect.objectContaining({ status: 'ok', check: 'agent command', text: `${FAKE_CLAUDE} is ${FAKE_CLAUDE}` }),
    );
    // Nothing listens on CALLBACK_URL: told, not failed (baton serve may simply not run yet).
    expect(found).toContainEqual(expect.objectContaining({ status: 'warn', check: 'CALLBACK_URL' }));
    expect(result.stdout).toMatch(/everything checked is fine$/m);
  });

  it('says a local run without the sandbox is not isolated, and that its runner makes itself undumpable', async () => {
    fs.writeFileSync(path.join(dir, 'baton.yaml'), 'local:\n  sandbox: none\n');
    const result = await doctor({ GITEA_URL: gitea.url, GITEA_DEV_TOKEN: tokens.dev!, GITEA_REVIEW_TOKEN: tokens.review! });
    const found = lines(result.stdout);
    expect(found).toContainEqual(
      expect.objectContaining({ status: 'warn', check: 'local runs', text: expect.stringMatching(/^local.sandbox is none/) }),
    );
    expect(found).toContainEqual({
      status: 'ok',
      check: 'runner memory',
      text: "a runner makes itself undumpable: an agent of its uid cannot read the runner's memory or environment (callback token included)",
    });
  });

  it('names each broken part with its fix: secret, a token of the wrong user, a missing scope, a private PUBLIC_URL', async () => {
    const result = await doctor(
      {
        GITEA_URL: gitea.url,
        GITEA_DEV_TOKEN: tokens.someoneElse!,
        GITEA_REVIEW_TOKEN: tokens.review!,
        PUBLIC_URL: 'http://10.0.0.5:3000',
      },
      '--repo',
      'acme/app',
    );
    expect(result.code).toBe(1);
    const found = lines(result.stdout);
    const fail = (check: string) => found.find((l) => l.status === 'FAIL' && l.check === check)?.text;
    // Not a failure any more: serve generates a secret at its next start (signatures are required).
    expect(found).toContainEqual({
      status: 'warn',
      check: 'webhook secret',
      text: expect.stringMatching(/^no webhook secret yet: baton serve generates one .* → start baton serve once/),
    });
    expect(fail('bot dev')).toBe("GITEA_DEV_TOKEN belongs to ops, not to claude-dev → use claude-dev's token, or set BOT_DEV_USERNAME=ops");
    expect(fail('bot review on acme/app')).toMatch(
      /^cannot comment: token does not have at least one of required scope\(s\): \[write:issue\] → give the token the write:issue scope/,
    );
    expect(found).toContainEqual(
      expect.objectContaining({ status: 'warn', check: 'PUBLIC_URL', text: expect.stringMatching(/ALLOWED_HOST_LIST/) }),
    );
    expect(result.stdout).not.toContain(tokens.review);
    expect(result.stdout).not.toContain(tokens.someoneElse);
  });

  it('uses the webhook secret baton serve generated, without ever printing it', async () => {
    const secret = 'generated-0123456789abcdef0123456789abcdef';
    fs.mkdirSync(path.join(dir, 'data'), { mode: 0o700 });
    fs.writeFileSync(path.join(dir, 'data', 'webhook-secret'), `${secret}\n`, { mode: 0o600 });
    const result = await doctor({ GITEA_URL: gitea.url, GITEA_DEV_TOKEN: tokens.dev!, GITEA_REVIEW_TOKEN: tokens.review! });
    expect(lines(result.stdout)).toContainEqual({
      status: 'ok',
      check: 'webhook secret',
      text: `generated by baton serve, in ${fs.realpathSync(dir)}/data/webhook-secret: unsigned deliveries are refused`,
    });
    expect(result.stdout + result.stderr).not.toContain(secret);
  });

  it('lists every configuration problem and stops there', async () => {
    const result = await doctor({ QUEUE_CONCURRENCY: 'lots', WORKSPACE_PROVIDER: 'kubernetes' });
    expect(result.code).toBe(1);
    expect(lines(result.stdout).map((l) => [l.status, l.text])).toEqual([
      ['FAIL', 'WORKSPACE_PROVIDER must be one of local, coder, got "kubernetes"'],
      ['FAIL', 'QUEUE_CONCURRENCY must be a whole number >= 1, got "lots"'],
    ]);
  });

  it.each([
    [
      'claude --foo',
      'BATON_AGENT_COMMAND must be a JSON array of strings such as ["aider","--message","{prompt}"], e.g. ["claude","--foo"], got "claude --foo"; see docs/troubleshooting.md#the-agent-command',
    ],
    [JSON.stringify(['aider', '{prompt}']), 'BATON_AGENT_COMMAND for stream-json output names the Claude Code executable only'],
  ])('agrees with config check and serve about BATON_AGENT_COMMAND=%s', async (command, problem) => {
    const env = { BATON_AGENT_COMMAND: command };
    const [doctored, checked, served] = await Promise.all([
      doctor(env),
      runBaton(['config', 'check'], { cwd: dir, env }),
      runBaton(['serve'], { cwd: dir, env: { ...env, PORT: '0' } }),
    ]);
    expect(doctored.code).toBe(1);
    expect(lines(doctored.stdout).map((l) => l.status + ' ' + l.text)).toEqual([expect.stringContaining(`FAIL ${problem}`)]);
    for (const refused of [checked, served]) {
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(problem);
    }
  });

  describe('with Coder', () => {
    let coder: FakeCoder;
    beforeEach(async () => {
      coder = await createFakeCoder();
    });
    afterEach(async () => {
      await coder.close();
    });
    const env = (templateId: string, callbackUrl: string) => ({
      CODER_URL: coder.url,
      CODER_TOKEN: coder.token,
      CODER_TEMPLATE_ID: templateId,
      CALLBACK_URL: callbackUrl,
    });

    it('accepts baton’s template', async () => {
      const result = await doctor(env(coder.template.id, 'https://baton.example.com'));
      const found = lines(result.stdout);
      expect(found).toContainEqual({ status: 'ok', check: 'coder', text: `${coder.url} accepts CODER_TOKEN (user baton)` });
      expect(found).toContainEqual({ status: 'ok', check: 'coder template', text: 'declares every parameter baton sends' });
      expect(found).toContainEqual(
        expect.objectContaining({
          status: 'ok',
          check: 'nested sandbox',
          text: expect.stringMatching(/^nested_sandbox is auto \(the template default\)/),
        }),
      );
    });

    it('warns that a template without callback_token_hash has its workspaces adopted by name', async () => {
      const older = coder.addTemplate(
        'baton-agent-before-identity',
        coder.template.parameters.filter((p) => p.name !== 'callback_token_hash'),
      );
      const result = await doctor(env(older.id, 'https://baton.example.com'));
      const found = lines(result.stdout).filter((l) => l.check === 'coder template');
      expect(found.map((l) => l.status)).toEqual(['ok', 'warn']);
      expect(found[1]!.text).toMatch(
        /^it lacks callback_token_hash: a run adopts the live workspace of its name by name and age, .* after a database restore .* → push the current deploy\/coder\/ template/,
      );
    });

    it('says when the nested sandbox is off, and what is left of the runner’s protection', async () => {
      fs.writeFileSync(path.join(dir, 'baton.yaml'), 'coder:\n  parameters:\n    nested_sandbox: "off"\n');
      const found = lines((await doctor(env(coder.template.id, 'https://baton.example.com'))).stdout);
      expect(found).toContainEqual({
        status: 'warn',
        check: 'nested sandbox',
        text: expect.stringMatching(
          /^coder.parameters.nested_sandbox is off: each run's agent runs as the runner's uid beside it, .* the runner makes itself undumpable .* → remove nested_sandbox from coder.parameters/,
        ),
      });
    });

    it('recognises the original orchestrator’s template and a callback URL no workspace can reach', async () => {
      const original = coder.addTemplate('claude-agent', [
        { name: 'task_type', required: true },
        { name: 'issue_number', required: true },
        { name: 'gitea_url', required: true },
        { name: 'gitea_org', required: true },
        { name: 'gitea_repo', required: true },
        { name: 'gitea_token', required: true },
        { name: 'claude_oauth_token', required: true },
        { name: 'repo_clone_url', required: true },
        { name: 'callback_url', required: true },
        { name: 'region', required: true },
      ]);
      const result = await doctor(env(original.id, 'http://127.0.0.1:3000'));
      expect(result.code).toBe(1);
      const failures = lines(result.stdout).filter((l) => l.status === 'FAIL');
      expect(failures.map((l) => l.check)).toEqual(['coder template', 'coder template', 'CALLBACK_URL']);
      expect(failures[0]!.text).toMatch(
        /lacks the parameters callback_token, run_id, setup_tokens, stage_skip_permissions: it is not baton's template .* → push deploy\/coder\//,
      );
      expect(failures[1]!.text).toMatch(/requires region, which baton does not send/);
      expect(failures[2]!.text).toMatch(/^http:\/\/127\.0\.0\.1:3000 is this machine as a Coder workspace sees itself/);
    });

    it('fails a rejected token', async () => {
      const result = await doctor({ ...env(coder.template.id, 'https://baton.example.com'), CODER_TOKEN: 'not-the-token' });
      expect(result.code).toBe(1);
      expect(lines(result.stdout)).toContainEqual(expect.objectContaining({ status: 'FAIL', check: 'coder' }));
      expect(result.stdout).not.toContain('not-the-token');
    });
  });
});
