import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAKE_CLAUDE } from './runner-fixture.js';

// The fake Claude Code CLI must read its arguments as the real one does, or the runner tests that
// rely on it prove nothing. Each case runs through the fake and, when it is installed (always under
// CI=true), through the real CLI (devDependency @anthropic-ai/claude-code, no credentials, no
// network), and both must show the same observable behaviour. Without credentials the real CLI
// answers every prompt it accepts with "Not logged in", so for accepted prompts only what comes
// before the API call is compared: the permission mode and whether the prompt ran as a command.

const repoRoot = fileURLToPath(new URL('../../..', import.meta.url));
const realClaude = path.join(repoRoot, 'node_modules', '.bin', 'claude');
const hasReal = fs.existsSync(realClaude);
if (!hasReal && process.env.CI !== 'true') {
  console.warn(`SKIPPED: comparing fake-claude.mjs with the real CLI: ${realClaude} not found (npm install); under CI=true this fails.`);
}

interface Observation {
  code: number | null;
  /** First line of stderr, or null when there was none. */
  error: string | null;
  /** `permissionMode` of the init message; null when no stream was printed. */
  permissionMode: string | null;
  /** The result when the prompt ran as a slash command, else null. */
  slashResult: { subtype: unknown; is_error: unknown; num_turns: unknown; result: unknown } | null;
  printed: boolean;
  /** The MCP servers the init message names, with their status. */
  mcpServers: { name: unknown; status: unknown }[] | null;
}

const PRINT = ['-p', '--output-format', 'stream-json', '--verbose'];
/** A stdio MCP server that answers nothing and ends at once: enough for the CLI to list it. */
const MCP_CONFIG = (name: string) => JSON.stringify({ mcpServers: { [name]: { type: 'stdio', command: 'true', args: [] } } });

let home: string;
beforeAll(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-claude-home-'));
});
afterAll(() => fs.rmSync(home, { recursive: true, force: true }));

function observe(command: string[], args: string[], stdin: string | null): Promise<Observation> {
  return new Promise((resolve, reject) => {
    const child = spawn(command[0]!, [...command.slice(1), ...args], {
      cwd: home,
      env: {
        PATH: process.env.PATH,
        HOME: home,
        XDG_CONFIG_HOME: path.join(home, '.config'),
        // The real CLI refuses --dangerously-skip-permissions as root outside a declared sandbox.
        IS_SANDBOX: '1',
      },
      stdio: [stdin === null ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    if (stdin !== null) child.stdin!.end(stdin);
    child.on('error', reject);
    child.on('close', (code) => {
      const messages = stdout
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      const init = messages.find((m) => m.type === 'system' && m.subtype === 'init');
      const result = messages.findLast((m) => m.type === 'result');
      const slash = typeof result?.result === 'string' && result.result.startsWith('Unknown command: ');
      resolve({
        code,
        error: stderr.split('\n').find((l) => l.trim() !== '') ?? null,
        permissionMode: typeof init?.permissionMode === 'string' ? init.permissionMode : null,
        slashResult: slash
          ? { subtype: result!.subtype, is_error: result!.is_error, num_turns: result!.num_turns, result: result!.result }
          : null,
        printed: messages.length > 0,
        mcpServers: Array.isArray(init?.mcp_servers) ? (init.mcp_servers as { name: unknown; status: unknown }[]) : null,
      });
    });
  });
}

const refused = (error: string): Partial<Observation> => ({ code: 1, error, printed: false });
const unknownCommand = (name: string) => ({ subtype: 'success', is_error: false, num_turns: 0, result: `Unknown command: ${name}` });

const CASES: { name: string; args: string[]; stdin?: string; expected: Partial<Observation> }[] = [
  {
    name: 'a prompt starting with "-" is an unknown option',
    args: [...PRINT, '- first step'],
    expected: refused("error: unknown option '- first step'"),
  },
  { name: 'an unknown option', args: [...PRINT, '--bogus', 'hi'], expected: refused("error: unknown option '--bogus'") },
  {
    name: 'stream-json without --verbose',
    args: ['-p', '--output-format', 'stream-json', 'hi'],
    expected: refused('Error: When using --print, --output-format=stream-json requires --verbose'),
  },
  {
    name: 'an option without its value',
    args: [...PRINT, '--model'],
    expected: refused("error: option '--model <model>' argument missing"),
  },
  {
    name: 'a value outside the choices',
    args: [...PRINT, '--output-format', 'bogus', '--', 'hi'],
    expected: refused("error: option '--output-format <format>' argument 'bogus' is invalid. Allowed choices are text, json, stream-json."),
  },
  {
    name: 'a variadic option swallows the prompt, and stdin is empty',
    args: [...PRINT, '--allowedTools', 'Read', 'hello'],
    stdin: '',
    expected: refused('Error: Input must be provided either through stdin or as a prompt argument when using --print'),
  },
  { name: 'whitespace on stdin prints nothing', args: PRINT, stdin: '  \n', expected: { code: 0, error: null, printed: false } },
  {
    name: 'a prompt after -- that starts with "-" runs',
    args: [...PRINT, '--allowedTools', 'Read', '--', '- first step'],
    expected: { error: null, permissionMode: 'default', slashResult: null, printed: true },
  },
  {
    name: 'a prompt starting with "/" runs as a command that does not exist',
    args: [...PRINT, '--', '/nosuchcommand do it'],
    expected: { code: 0, error: null, permissionMode: 'default', slashResult: unknownCommand('/nosuchcommand') },
  },
  {
    name: 'the same from stdin',
    args: PRINT,
    stdin: '/nosuchcommand\n',
    expected: { code: 0, error: null, slashResult: unknownCommand('/nosuchcommand') },
  },
  {
    name: 'a newline in front keeps it a prompt; skipping permissions shows in init',
    args: [...PRINT, '--dangerously-skip-permissions', '--', '\n/nosuchcommand'],
    expected: { error: null, permissionMode: 'bypassPermissions', slashResult: null, printed: true },
  },
  {
    name: 'an MCP config file that is not there is refused before anything runs',
    args: [...PRINT, '--mcp-config', '/nonexistent/baton-mcp.json', '--', 'hi'],
    expected: refused('Error: Invalid MCP configuration:'),
  },
  {
    name: 'MCP servers from JSON strings (variadic, ended by --) are named in init, still connecting',
    args: [...PRINT, '--mcp-config', MCP_CONFIG('baton'), MCP_CONFIG('other'), '--', 'hi'],
    expected: {
      error: null,
      printed: true,
      mcpServers: [
        { name: 'baton', status: 'pending' },
        { name: 'other', status: 'pending' },
      ],
    },
  },
];

const CLIS: { name: string; command: string[]; run: boolean }[] = [
  { name: 'fake-claude.mjs', command: [process.execPath, FAKE_CLAUDE], run: true },
  { name: 'the real Claude Code CLI', command: [realClaude], run: hasReal || process.env.CI === 'true' },
];

describe.each(CLIS.filter((c) => c.run))('$name parses its arguments like Claude Code 2.1.197', ({ command }) => {
  it.each(CASES)('$name', async ({ args, stdin, expected }) => {
    if (!fs.existsSync(command[command.length - 1]!)) throw new Error(`CI=true but ${command.join(' ')} is not installed: run npm ci`);
    expect(await observe(command, args, stdin ?? null)).toMatchObject(expected);
  });
});

describe('fake-claude.mjs asks through baton’s MCP tool only where the real CLI would let it', () => {
  async function askMcp(args: string[]) {
    const child = spawn(process.execPath, [FAKE_CLAUDE, ...PRINT, ...args, '--', 'go'], {
      cwd: home,
      env: { PATH: process.env.PATH, HOME: home, FAKE_CLAUDE_MODE: 'ask-mcp' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    const messages = stdout
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map(
        (l) =>
          JSON.parse(l) as { type: string; message?: { content?: { type: string; content?: unknown }[] }; permission_denials?: unknown[] },
      );
    const toolResult = messages.flatMap((m) => (m.type === 'user' ? (m.message?.content ?? []) : [])).find((c) => c.type === 'tool_result');
    return {
      code,
      toolResult: JSON.stringify(toolResult?.content),
      denials: messages.findLast((m) => m.type === 'result')?.permission_denials,
    };
  }

  it('refuses mcp__baton__ask in print mode without permission, and lists the denial', async () => {
    const asked = await askMcp(['--mcp-config', MCP_CONFIG('baton')]);
    expect(asked.code).toBe(1);
    expect(asked.toolResult).toContain("Claude requested permissions to use mcp__baton__ask, but you haven't granted it yet.");
    expect(asked.denials).toEqual([expect.objectContaining({ tool_name: 'mcp__baton__ask' })]);
  });

  it('has no such tool without the server', async () => {
    const asked = await askMcp(['--dangerously-skip-permissions']);
    expect(asked.code).toBe(1);
    expect(asked.toolResult).toContain('No such tool available: mcp__baton__ask');
  });
});
