import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runAgent } from '../../src/agent/index.js';
import { BATON_MCP_CONFIG } from '../../src/agents/index.js';
import { createBareRepo } from '../fakes/agent/git-repos.js';
import { createRunnerFixture, type RunnerFixture } from '../fakes/agent/runner-fixture.js';

// The runner against the fake Claude Code CLI, which parses its arguments as the real CLI 2.1.197
// does (see the observations at the top of test/fakes/agent/fake-claude.mjs): a prompt the runner
// passed the wrong way fails here the way it would fail with the real CLI.

let fixture: RunnerFixture;
const PRINT = ['-p', '--output-format', 'stream-json', '--verbose'];

beforeEach(async () => {
  fixture = await createRunnerFixture();
});

afterEach(() => fixture.close());

/** Options for a `develop` run whose repository holds `.claude/commands/develop.md` = `command`. */
function withCommand(mode: string, command: string, overrides: Parameters<RunnerFixture['options']>[1] = {}) {
  const cloneUrl = createBareRepo(fixture.root, `app-${Math.random().toString(36).slice(2, 8)}`, {
    develop: { '.claude/commands/develop.md': command },
  });
  return fixture.options(mode, { cloneUrl, ...overrides });
}

describe('the Claude Code command line', () => {
  it('pre-approves the command file allowed-tools, without skipping permissions, and puts the prompt after --', async () => {
    const opts = fixture.options('success');
    await runAgent(opts);
    expect(await fixture.receiver.accepted()).toMatchObject({ status: 'succeeded' });
    const record = fixture.readRecord(opts.record);
    expect(record.argv).toEqual([
      '-p',
      '--output-format',
      'stream-json',
      '--verbose',
      '--allowedTools',
      'Bash(git:*)',
      'Read',
      'Edit',
      // Asking is baton's own: allowed beside the file's tools, through `baton mcp` or `baton ask`.
      'mcp__baton__ask',
      'Bash(baton ask:*)',
      '--mcp-config',
      BATON_MCP_CONFIG,
      '--',
      'Implement issue #42 on the develop branch.\n\nThen post a summary on issue 42.',
    ]);
    expect(record.permissionMode).toBe('default');
    expect(record.options['allowed-tools']).toEqual(['Bash(git:*)', 'Read', 'Edit', 'mcp__baton__ask', 'Bash(baton ask:*)']);
    expect(record.options['mcp-config']).toEqual([BATON_MCP_CONFIG]);
  });

  it('skips permissions for a command file without allowed-tools by default, and not when the stage says so', async () => {
    const skipping = withCommand('success', 'Fix issue $ARGUMENTS.\n');
    await runAgent(skipping);
    expect(fixture.readRecord(skipping.record)).toMatchObject({
      permissionMode: 'bypassPermissions',
      argv: [...PRINT, '--dangerously-skip-permissions', '--mcp-config', BATON_MCP_CONFIG, '--', 'Fix issue 42.'],
    });

    const asking = withCommand('success', 'Fix issue $ARGUMENTS.\n', { skipPermissions: false });
    await runAgent(asking);
    expect(fixture.readRecord(asking.record)).toMatchObject({
      permissionMode: 'default',
      argv: [...PRINT, '--allowedTools', 'mcp__baton__ask', 'Bash(baton ask:*)', '--mcp-config', BATON_MCP_CONFIG, '--', 'Fix issue 42.'],
    });
  });

  it('passes the command file model as --model', async () => {
    const opts = withCommand('success', '---\nmodel: claude-opus-4-8[1m]\nallowed-tools: [Read, "Bash(npm run test:*)"]\n---\nTest it.\n');
    await runAgent(opts);
    expect(await fixture.receiver.accepted()).toMatchObject({ status: 'succeeded' });
    const record = fixture.readRecord(opts.record);
    expect(record.model).toBe('claude-opus-4-8[1m]');
    expect(record.options['allowed-tools']).toEqual(['Read', 'Bash(npm run test:*)', 'mcp__baton__ask', 'Bash(baton ask:*)']);
  });

  it('runs a prompt that starts with "-" as a prompt, not as an option', async () => {
    const opts = withCommand('success', '- first step: read issue $ARGUMENTS\n- then fix it\n');
    await runAgent(opts);
    expect(await fixture.receiver.accepted()).toMatchObject({
      status: 'succeeded',
      summary: 'Finished the task for: - first step: read issue 42',
    });
    expect(fixture.readRecord(opts.record)).toMatchObject({
      prompt: '- first step: read issue 42\n- then fix it',
      promptSource: 'argument',
    });
  });

  it('never lets a prompt that starts with "/" run as a slash command', async () => {
    const opts = withCommand('success', '/deploy the fix for issue $ARGUMENTS\n');
    await runAgent(opts);
    expect(await fixture.receiver.accepted()).toMatchObject({ status: 'succeeded' });
    // The newline in front is what keeps the CLI from looking the word up as a command.
    expect(fixture.readRecord(opts.record).prompt).toBe('\n/deploy the fix for issue 42');
  });

  it('sends a prompt over 100 KiB on stdin and a shorter one as an argument', async () => {
    const long = `Context for issue $ARGUMENTS:\n${'lorem ipsum dolor sit amet '.repeat(4_000)}\n`;
    const opts = withCommand('success', long);
    await runAgent(opts);
    expect(await fixture.receiver.accepted()).toMatchObject({ status: 'succeeded' });
    const record = fixture.readRecord(opts.record);
    expect(record.promptSource).toBe('stdin');
    expect(record.prompt).toBe(long.replaceAll('$ARGUMENTS', '42').trim());
    // `--mcp-config` last: its values end with the arguments, and the prompt comes on stdin.
    expect(record.argv).toEqual([...PRINT, '--dangerously-skip-permissions', '--mcp-config', BATON_MCP_CONFIG]);
  });

  it('refuses a command file whose front matter would smuggle options onto the command line', async () => {
    for (const frontMatter of [
      'allowed-tools: --dangerously-skip-permissions',
      'model: "--settings=/etc/passwd"',
      'allowed-tools: {a: 1}',
    ]) {
      const opts = withCommand('success', `---\n${frontMatter}\n---\nDo it.\n`);
      const outcome = await runAgent(opts);
      expect(outcome).toMatchObject({ status: 'failed', error: 'command_file_invalid' });
      expect(outcome.summary).toMatch(/^\.claude\/commands\/develop\.md: (allowed-tools|model) /);
    }
  });

  it('refuses a stream-json agent command that carries its own {prompt}', async () => {
    const outcome = await runAgent(fixture.options('success', { agentCommand: ['claude', '-p', '{prompt}'] }));
    expect(outcome).toMatchObject({ status: 'failed', error: 'runner_error' });
    expect(outcome.summary).toContain('names the Claude Code executable only');
  });

  it('gives a text agent without {prompt} the prompt on stdin', async () => {
    const opts = fixture.options('success', {
      agentCommand: [
        process.execPath,
        '-e',
        'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log("got: "+s.split("\\n")[0]))',
      ],
      outputFormat: 'text',
    });
    await runAgent(opts);
    expect(await fixture.receiver.accepted()).toMatchObject({
      status: 'succeeded',
      summary: 'got: Implement issue #42 on the develop branch.',
    });
  });
});

describe('results that look like success', () => {
  it('fails a zero-cost "success" that only says Unknown skill', async () => {
    await runAgent(fixture.options('unknown-skill'));
    const body = await fixture.receiver.accepted();
    expect(body).toMatchObject({ status: 'failed', error: 'no_turns', costUsd: 0 });
    expect(body.summary).toBe(
      'Claude Code ran the prompt as a slash command and answered "Unknown skill: missing-workflowprogram-entry" without doing anything',
    );
  });

  it('fails a result that has no is_error', async () => {
    await runAgent(fixture.options('no-is-error'));
    const body = await fixture.receiver.accepted();
    expect(body).toMatchObject({ status: 'failed', error: 'agent_error' });
    expect(body.summary).toBe(
      "the agent's result message has subtype success but no is_error field, so it cannot be told from a failure: Done?",
    );
  });
});
