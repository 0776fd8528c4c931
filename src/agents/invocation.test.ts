import { describe, expect, it } from 'vitest';
import { CommandFileError, RunFailure } from './errors.js';
import {
  BATON_MCP_CONFIG,
  claudeInvocation,
  neutraliseSlash,
  PROMPT_ARGUMENT_MAX_BYTES,
  sessionFromFrontMatter,
  templateInvocation,
} from './invocation.js';

const skip = { allowedTools: null, model: null, skipPermissions: true };

describe('claudeInvocation', () => {
  it('puts the prompt after -- and skips permissions only without allowed-tools', () => {
    expect(claudeInvocation(['claude'], '- step one', skip)).toEqual({
      command: 'claude',
      args: ['-p', '--output-format', 'stream-json', '--verbose', '--dangerously-skip-permissions', '--', '- step one'],
      stdin: null,
      promptVia: 'argument',
    });
    const restricted = claudeInvocation(['npx', 'claude'], 'go', {
      allowedTools: ['Bash(git add:*)', 'Read'],
      model: 'opus',
      skipPermissions: true,
    });
    expect([restricted.command, ...restricted.args]).toEqual([
      'npx',
      'claude',
      '-p',
      '--output-format',
      'stream-json',
      '--verbose',
      '--allowedTools',
      'Bash(git add:*)',
      'Read',
      '--model=opus',
      '--',
      'go',
    ]);
    expect(claudeInvocation(['claude'], 'go', { ...skip, skipPermissions: false }).args).toEqual([
      '-p',
      '--output-format',
      'stream-json',
      '--verbose',
      '--',
      'go',
    ]);
    // An empty allowed-tools list pre-approves nothing and still does not skip permissions.
    expect(claudeInvocation(['claude'], 'go', { ...skip, allowedTools: [] }).args).not.toContain('--dangerously-skip-permissions');
  });

  it('registers baton’s MCP server in a run, its ask tool allowed wherever permissions are not skipped', () => {
    const ask = { ...skip, canAsk: true };
    expect(JSON.parse(BATON_MCP_CONFIG)).toEqual({ mcpServers: { baton: { type: 'stdio', command: 'baton', args: ['mcp'] } } });
    // `--mcp-config` takes several values: the `--` before the prompt ends it.
    expect(claudeInvocation(['claude'], 'go', ask).args.slice(4)).toEqual([
      '--dangerously-skip-permissions',
      '--mcp-config',
      BATON_MCP_CONFIG,
      '--',
      'go',
    ]);
    expect(claudeInvocation(['claude'], 'go', { ...ask, allowedTools: ['Read'], model: 'opus' }).args.slice(4)).toEqual([
      '--allowedTools',
      'Read',
      'mcp__baton__ask',
      'Bash(baton ask:*)',
      '--mcp-config',
      BATON_MCP_CONFIG,
      '--model=opus',
      '--',
      'go',
    ]);
    expect(claudeInvocation(['claude'], 'go', { ...ask, skipPermissions: false }).args.slice(4, 6)).toEqual([
      '--allowedTools',
      'mcp__baton__ask',
    ]);
  });

  it('sends a prompt over 100 KiB (in UTF-8 bytes) on stdin', () => {
    const fits = 'é'.repeat(PROMPT_ARGUMENT_MAX_BYTES / 2);
    expect(claudeInvocation(['claude'], fits, skip).promptVia).toBe('argument');
    const over = `${fits}x`;
    const invocation = claudeInvocation(['claude'], over, skip);
    expect(invocation).toMatchObject({ stdin: over, promptVia: 'stdin' });
    expect(invocation.args.at(-1)).toBe('--dangerously-skip-permissions');
  });

  it('refuses a command carrying {prompt} or nothing', () => {
    expect(() => claudeInvocation(['claude', '-p', '{prompt}'], 'x', skip)).toThrow(RunFailure);
    expect(() => claudeInvocation([], 'x', skip)).toThrow('the agent command is empty');
  });
});

describe('neutraliseSlash', () => {
  it('puts a newline before a leading / and leaves everything else alone', () => {
    expect(neutraliseSlash('/review 12')).toBe('\n/review 12');
    expect(neutraliseSlash('Run /review 12')).toBe('Run /review 12');
    expect(neutraliseSlash('- x')).toBe('- x');
  });
});

describe('templateInvocation', () => {
  it('replaces {prompt}, or uses stdin without it, and refuses an argument too long for the OS', () => {
    expect(templateInvocation(['aider', '--message={prompt}'], 'hi')).toEqual({
      command: 'aider',
      args: ['--message=hi'],
      stdin: null,
      promptVia: 'argument',
    });
    expect(templateInvocation(['agent', '--yes'], 'hi')).toEqual({ command: 'agent', args: ['--yes'], stdin: 'hi', promptVia: 'stdin' });
    expect(() => templateInvocation(['agent', '{prompt}'], 'x'.repeat(PROMPT_ARGUMENT_MAX_BYTES + 1))).toThrow(
      /over the 100 KiB one argument may hold: remove "\{prompt\}"/,
    );
  });
});

describe('sessionFromFrontMatter', () => {
  const label = '.claude/commands/develop.md';

  it('reads allowed-tools as Claude Code writes them: commas or spaces, parentheses kept whole, or a list', () => {
    expect(sessionFromFrontMatter({ 'allowed-tools': 'Bash(git add:*), Bash(git commit:*) Read,Edit' }, label)).toEqual({
      allowedTools: ['Bash(git add:*)', 'Bash(git commit:*)', 'Read', 'Edit'],
      model: null,
    });
    expect(
      sessionFromFrontMatter({ 'allowed-tools': ['mcp__forge__create_issue', 'WebFetch(domain:example.org)'], model: ' sonnet ' }, label),
    ).toEqual({
      allowedTools: ['mcp__forge__create_issue', 'WebFetch(domain:example.org)'],
      model: 'sonnet',
    });
    expect(sessionFromFrontMatter({ description: 'x' }, label)).toEqual({ allowedTools: null, model: null });
  });

  it('refuses values that would be options, or are not tools or models at all', () => {
    for (const frontMatter of [
      { 'allowed-tools': '--dangerously-skip-permissions' },
      { 'allowed-tools': 'Bash(rm -rf /' },
      { 'allowed-tools': 'Read\n--settings' },
      { 'allowed-tools': 42 },
      { model: '--settings=/etc/passwd' },
      { model: 'a b' },
      { model: ['opus'] },
    ]) {
      expect(() => sessionFromFrontMatter(frontMatter, label), JSON.stringify(frontMatter)).toThrow(CommandFileError);
    }
    expect(() => sessionFromFrontMatter({ model: '-x' }, label)).toThrow(
      '.claude/commands/develop.md: model must be a model name or alias such as sonnet or claude-sonnet-4-5, got "-x"',
    );
  });
});
