import { neutraliseSlash } from './common.js';
import { CommandFileError, RunFailure } from './errors.js';
import type { AgentInvocation, AgentSession } from './types.js';

/**
 * How the agent CLI is started: its argv and what goes to its stdin. Claude Code reads the prompt
 * through its option parser (commander), which the real CLI 2.1.197 showed to be unsafe for
 * arbitrary text (../shared/reference/claude-code/STREAM-JSON.md §1, and the observations written
 * down in test/fakes/agent/fake-claude.mjs):
 * - a prompt starting with `-` is an option (`error: unknown option '- first step'`, exit 1), so the
 *   prompt always follows `--`;
 * - a variadic option such as `--allowedTools` swallows every following word, which `--` also stops;
 * - a prompt starting with `/` runs as a slash command (an unknown one "succeeds" with zero turns),
 *   and only its very first character counts;
 * - one argument holds at most 128 KiB (`spawn E2BIG`), so long prompts go to stdin, which the CLI
 *   reads when no prompt argument is given.
 */

/** Prompts larger than this (UTF-8 bytes) go to stdin: Linux refuses a single argument of 128 KiB. */
export const PROMPT_ARGUMENT_MAX_BYTES = 100 * 1024;

/** The Claude Code arguments baton always passes: headless, NDJSON on stdout (which needs --verbose). */
export const CLAUDE_PRINT_ARGS: readonly string[] = ['-p', '--output-format', 'stream-json', '--verbose'];

/** The default agent executable; baton adds the arguments itself (see claudeInvocation). */
export const CLAUDE_COMMAND: readonly string[] = ['claude'];

/** What a stage's command file and configuration decide about the Claude Code session. */
export type ClaudeSession = AgentSession;

/**
 * Claude Code's argv: `<command…> -p --output-format stream-json --verbose` + permissions + model,
 * then `-- <prompt>`, or nothing more and the prompt on stdin when it is too long for argv.
 */
export function claudeInvocation(command: readonly string[], prompt: string, session: ClaudeSession): AgentInvocation {
  const [executable, ...prefix] = command;
  if (!executable) throw new RunFailure('the agent command is empty');
  if (command.some((arg) => arg.includes('{prompt}'))) {
    throw new RunFailure(
      'the agent command for stream-json output names the Claude Code executable only (e.g. ["claude"]); ' +
        'baton adds -p, --output-format, permissions, model and the prompt itself: remove "{prompt}" and the options',
    );
  }
  const args = [...prefix, ...CLAUDE_PRINT_ARGS, ...claudeSessionArgs(session)];
  const text = neutraliseSlash(prompt);
  if (Buffer.byteLength(text) > PROMPT_ARGUMENT_MAX_BYTES) return { command: executable, args, stdin: text, promptVia: 'stdin' };
  return { command: executable, args: [...args, '--', text], stdin: null, promptVia: 'argument' };
}

/** baton's MCP server (`baton mcp`, on the run's PATH) as Claude Code's `--mcp-config` takes it. */
export const BATON_MCP_CONFIG = JSON.stringify({ mcpServers: { baton: { type: 'stdio', command: 'baton', args: ['mcp'] } } });
/**
 * The permission rules of asking: `baton mcp`'s `ask` tool as Claude Code names it
 * (`mcp__<server>__<tool>`), and `baton ask` through the Bash tool (a command-prefix rule).
 */
export const BATON_ASK_TOOLS = ['mcp__baton__ask', 'Bash(baton ask:*)'] as const;

/**
 * The arguments of a Claude Code session, the same for its first turn and every resumed one (a
 * session resumed without them would lose its permissions): permissions, baton's MCP server,
 * the model. Asking is baton's own, so both ways of it are allowed wherever permissions are not
 * skipped: beside the command file's `allowed-tools`, or alone (Claude Code's print mode refuses
 * any tool not allowed: "Claude requested permissions to use mcp__…, but you haven't granted it
 * yet", anthropics/claude-agent-sdk-typescript#100), else a stage restricted to its tools could
 * never ask.
 */
export function claudeSessionArgs(session: ClaudeSession): string[] {
  const args: string[] = [];
  const mayAsk = session.canAsk === true;
  if (session.allowedTools !== null || !session.skipPermissions) {
    // Each tool its own argument: `Bash(git add:*)` holds a space the CLI must not split on.
    const tools = [...(session.allowedTools ?? []), ...(mayAsk ? BATON_ASK_TOOLS : [])];
    if (tools.length > 0) args.push('--allowedTools', ...tools);
  } else {
    args.push('--dangerously-skip-permissions');
  }
  // `--mcp-config` takes several values (variadic): the next option, or `--`, ends it.
  if (mayAsk) args.push('--mcp-config', BATON_MCP_CONFIG);
  // `--model=value`: the value can never be read as an option of its own.
  if (session.model !== null) args.push(`--model=${session.model}`);
  return args;
}

/**
 * Another CLI agent from a template: each `{prompt}` is replaced by the prompt; a template
 * without `{prompt}` gets the prompt on stdin. What the CLI makes of its arguments is the
 * template author's business, but an argument too long for the OS is refused here with a reason
 * rather than by spawn as E2BIG.
 */
export function templateInvocation(template: readonly string[], prompt: string): AgentInvocation {
  const [executable, ...rest] = template;
  if (!executable) throw new RunFailure('the agent command is empty');
  if (!template.some((arg) => arg.includes('{prompt}'))) return { command: executable, args: rest, stdin: prompt, promptVia: 'stdin' };
  const args = rest.map((arg) => arg.split('{prompt}').join(prompt));
  const longest = Math.max(0, ...args.map((arg) => Buffer.byteLength(arg)));
  if (longest > PROMPT_ARGUMENT_MAX_BYTES) {
    throw new RunFailure(
      `the prompt makes an agent argument of ${Math.ceil(longest / 1024)} KiB, over the ${PROMPT_ARGUMENT_MAX_BYTES / 1024} KiB ` +
        'one argument may hold: remove "{prompt}" from the agent command so that the prompt goes to its stdin',
    );
  }
  return { command: executable, args, stdin: null, promptVia: 'argument' };
}

export { neutraliseSlash } from './common.js';

/** Tool rules as Claude Code writes them: `Read`, `Bash(git add:*)`, `mcp__forge__create_issue`, `WebFetch(domain:x.org)`. */
const TOOL_RULE = /^[A-Za-z][A-Za-z0-9_*-]{0,127}(\([^()\p{Cc}]{1,512}\))?$/u;
/** Model names and aliases: `opus`, `claude-opus-4-8[1m]`, `us.anthropic.claude-opus-4-6-v1`. */
const MODEL_NAME = /^[A-Za-z0-9][A-Za-z0-9._:@/[\]-]{0,127}$/;

/**
 * The parts of a command file's front matter that change how the CLI is started, checked
 * strictly: the file comes from the repository, and its values end up on the agent's command line.
 * @param label the file, for error messages
 */
export function sessionFromFrontMatter(frontMatter: Record<string, unknown>, label: string): Pick<ClaudeSession, 'allowedTools' | 'model'> {
  let allowedTools: string[] | null = null;
  const rawTools = frontMatter['allowed-tools'];
  if (rawTools !== undefined && rawTools !== null) {
    const entries =
      typeof rawTools === 'string'
        ? splitToolList(rawTools)
        : Array.isArray(rawTools) && rawTools.every((t) => typeof t === 'string')
          ? rawTools.flatMap(splitToolList)
          : null;
    if (entries === null) {
      throw new CommandFileError(`${label}: allowed-tools must be a list of tools such as "Bash(git:*), Read, Edit"`);
    }
    const bad = entries.find((tool) => !TOOL_RULE.test(tool));
    if (bad !== undefined) {
      throw new CommandFileError(
        `${label}: allowed-tools entry ${JSON.stringify(bad)} is not a tool rule (a tool name such as Read, optionally followed by a rule in parentheses such as Bash(git add:*))`,
      );
    }
    allowedTools = entries;
  }
  let model: string | null = null;
  const rawModel = frontMatter.model;
  if (rawModel !== undefined && rawModel !== null) {
    if (typeof rawModel !== 'string' || !MODEL_NAME.test(rawModel.trim())) {
      throw new CommandFileError(
        `${label}: model must be a model name or alias such as sonnet or claude-sonnet-4-5, got ${JSON.stringify(rawModel)}`,
      );
    }
    model = rawModel.trim();
  }
  return { allowedTools, model };
}

/** `Bash(git add:*), Read Edit` → three rules: commas and spaces separate, except inside parentheses. */
function splitToolList(text: string): string[] {
  const tools: string[] = [];
  let depth = 0;
  let current = '';
  for (const char of text) {
    if (char === '(') depth += 1;
    if (char === ')') depth = Math.max(0, depth - 1);
    if (depth === 0 && (char === ',' || /\s/.test(char))) {
      if (current !== '') tools.push(current);
      current = '';
    } else {
      current += char;
    }
  }
  if (current !== '') tools.push(current);
  return tools;
}
