#!/usr/bin/env node
// A stand-in for `gemini --output-format stream-json …` (Gemini CLI 0.61.0, @google/gemini-cli):
// parses argv as its yargs parser does, reads the prompt as it does (stdin, with -p appended),
// and prints its JSONL events (SOURCES.md says what was checked and how).
//
//   unknown option          stderr `Unknown argument: bogus` and the usage, exit 1
//   bad --output-format     stderr `Invalid values: Argument: output-format, Given: "x", Choices: …`, exit 1
//   no GEMINI_API_KEY       stderr `Please set an Auth method in …/settings.json or specify one of the following
//                           environment variables before running: GEMINI_API_KEY, …`, exit 41, no stream
//   a prompt starting "/"   a slash command, not a prompt (emulated as exit 42: none is known here)
//
// FAKE_AGENT_MODE: success (default) | auth (as without a key) | rate-limited | server-error | unreachable |
// turn-limit | bad-input |
// crash | hang | token-overrun (a result reporting FAKE_AGENT_TOKENS tokens, default 5,000,000) |
// ask (a conversation: a new session runs `baton ask "<question>"` through its shell tool and ends
// its turn; a resumed one answers from the reply, saying how many messages it found of its session).
import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { askBaton, emit, fail, hang, mode, question, readStdin, record, replyOf } from './fake-agent-kit.mjs';

const CHOICES = { 'output-format': ['text', 'json', 'stream-json'], 'approval-mode': ['default', 'auto_edit', 'yolo', 'plan'] };
// `gemini --help` of 0.61.0 (yargs, strict): booleans, strings (nargs 1) and arrays.
const FLAGS = new Map([
  ['--skip-trust', 'skip-trust'],
  ['-y', 'yolo'],
  ['--yolo', 'yolo'],
  ['-d', 'debug'],
  ['--debug', 'debug'],
  ['-s', 'sandbox'],
  ['--sandbox', 'sandbox'],
  ['--acp', 'acp'],
  ['--experimental-acp', 'experimental-acp'],
  ['-l', 'list-extensions'],
  ['--list-extensions', 'list-extensions'],
  ['--list-sessions', 'list-sessions'],
  ['--screen-reader', 'screen-reader'],
  ['--raw-output', 'raw-output'],
  ['--accept-raw-output-risk', 'accept-raw-output-risk'],
]);
const VALUED = new Map([
  ['-o', 'output-format'],
  ['--output-format', 'output-format'],
  ['--approval-mode', 'approval-mode'],
  ['-m', 'model'],
  ['--model', 'model'],
  ['-p', 'prompt'],
  ['--prompt', 'prompt'],
  ['-i', 'prompt-interactive'],
  ['--prompt-interactive', 'prompt-interactive'],
  ['-w', 'worktree'],
  ['--worktree', 'worktree'],
  ['-r', 'resume'],
  ['--resume', 'resume'],
  ['--session-file', 'session-file'],
  ['--session-id', 'session-id'],
  ['--delete-session', 'delete-session'],
  ['--policy', 'policy'],
  ['--admin-policy', 'admin-policy'],
  ['--allowed-mcp-server-names', 'allowed-mcp-server-names'],
  ['--allowed-tools', 'allowed-tools'],
  ['-e', 'extensions'],
  ['--extensions', 'extensions'],
  ['--include-directories', 'include-directories'],
]);

// The real CLI prints yargs' message first, then the usage (seen with 0.61.0).
function usageError(message) {
  fail(
    `${message}\nUsage: gemini [options] [command]\n\nGemini CLI - Defaults to interactive mode. Use -p/--prompt for non-interactive (headless) mode.`,
    1,
  );
}

function parse(argv) {
  const options = {};
  const positionals = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--') {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (!arg.startsWith('-')) {
      positionals.push(arg);
      continue;
    }
    const eq = arg.startsWith('--') ? arg.indexOf('=') : -1;
    const name = eq > 0 ? arg.slice(0, eq) : arg;
    if (FLAGS.has(name)) {
      options[FLAGS.get(name)] = eq > 0 ? arg.slice(eq + 1) !== 'false' : true;
      continue;
    }
    const key = VALUED.get(name);
    if (!key) usageError(`Unknown argument: ${arg.replace(/^-+/, '').split('=')[0]}`);
    // nargs: 1 — the next word is the value whatever it looks like.
    const value = eq > 0 ? arg.slice(eq + 1) : argv[++i];
    if (value === undefined) usageError(`Not enough arguments following: ${key}`);
    if (CHOICES[key] && !CHOICES[key].includes(value)) {
      usageError(`Invalid values:\n  Argument: ${key}, Given: "${value}", Choices: ${CHOICES[key].map((c) => `"${c}"`).join(', ')}`);
    }
    options[key] = value;
  }
  return { options, positionals };
}

const { options, positionals } = parse(process.argv.slice(2));
const stdin = readStdin();
// packages/cli: stdin first, then -p (or the positional query) after a blank line.
const given = options.prompt ?? (positionals.length ? positionals.join(' ') : undefined);
const prompt = stdin ? (given ? `${stdin}\n\n${given}` : stdin) : (given ?? '');
if (options['output-format'] !== 'stream-json') fail('fake-gemini: only --output-format stream-json is emulated', 2);
if (!process.env.GEMINI_API_KEY || mode() === 'auth') {
  fail(
    `Please set an Auth method in ${process.env.HOME}/.gemini/settings.json or specify one of the following environment variables before running: GEMINI_API_KEY, GOOGLE_GENAI_USE_VERTEXAI, GOOGLE_GENAI_USE_GCA`,
    41,
  );
}
if (prompt.trim() === '')
  fail('No input provided via stdin. Input can be provided by piping data into gemini or using the --prompt option.', 42);
const yolo = options.yolo === true || options['approval-mode'] === 'yolo';
record({
  agent: 'gemini',
  prompt,
  promptSource: stdin ? 'stdin' : 'argument',
  options,
  resume: options.resume ?? null,
  yolo,
  model: options.model ?? 'auto',
});
const m = mode();
if (m === 'bad-input' || (prompt.startsWith('/') && !prompt.startsWith('//') && !prompt.startsWith('/*'))) {
  fail(`Unknown command: ${prompt.split(/\s/)[0]}`, 42);
}

const now = () => new Date().toISOString();
const { id: session, restored } = openSession(options.resume ?? null, prompt);
const model = options.model ?? 'auto';
emit({ type: 'init', timestamp: now(), session_id: session, model });
emit({ type: 'message', timestamp: now(), role: 'user', content: prompt });
const stats = (input, cached, output) => ({
  total_tokens: input + output,
  input_tokens: input,
  output_tokens: output,
  cached,
  input: input - cached,
  duration_ms: 1234,
  tool_calls: 1,
  models: { [model]: { total_tokens: input + output, input_tokens: input, output_tokens: output, cached, input: input - cached } },
});
const apiError = (message) => {
  emit({ type: 'error', timestamp: now(), severity: 'error', message });
  emit({ type: 'result', timestamp: now(), status: 'error', error: { type: 'Error', message }, stats: stats(0, 0, 0) });
  process.exit(1);
};
if (m === 'rate-limited')
  apiError('[API Error: You have exhausted your capacity on this model. Your quota will reset after 0s. (Status: 429 RESOURCE_EXHAUSTED)]');
// No network: 0.61.0 retries (`Attempt 1 failed. Retrying with backoff... Error: exception TypeError:
// fetch failed sending request` on stderr); what it prints once the retries are spent is approximated.
if (m === 'unreachable') apiError('exception TypeError: fetch failed sending request');
if (m === 'server-error') apiError('[API Error: The model is overloaded. Please try again later. (Status: 503 UNAVAILABLE)]');
if (m === 'ask' && options.resume === undefined) {
  const asked = askBaton(question());
  emit({
    type: 'tool_use',
    timestamp: now(),
    tool_name: 'run_shell_command',
    tool_id: 'run_shell_command-1',
    parameters: { command: asked.command },
  });
  emit({
    type: 'tool_result',
    timestamp: now(),
    tool_id: 'run_shell_command-1',
    status: asked.ok ? 'success' : 'error',
    output: asked.output,
  });
  emit({ type: 'message', timestamp: now(), role: 'assistant', content: `I asked: ${question()}`, delta: true });
  emit({ type: 'result', timestamp: now(), status: 'success', stats: stats(3_000, 1_000, 120) });
  process.exit(asked.ok ? 0 : 1);
}
if (m === 'ask') {
  const text = `Answered in session ${session} (${restored} messages restored): ${replyOf(prompt)}`;
  emit({ type: 'message', timestamp: now(), role: 'assistant', content: text, delta: true });
  emit({ type: 'result', timestamp: now(), status: 'success', stats: stats(3_000, 1_000, 120) });
  process.exit(0);
}
emit({ type: 'message', timestamp: now(), role: 'assistant', content: 'Let me look', delta: true });
emit({ type: 'tool_use', timestamp: now(), tool_name: 'list_directory', tool_id: 'list_directory-1', parameters: { dir_path: '.' } });
emit({ type: 'tool_result', timestamp: now(), tool_id: 'list_directory-1', status: 'success', output: 'Listed 1 item(s).' });
if (m === 'crash') process.exit(1);
if (m === 'hang') await hang();
if (m === 'turn-limit') {
  emit({ type: 'error', timestamp: now(), severity: 'error', message: 'Maximum session turns exceeded' });
  emit({
    type: 'result',
    timestamp: now(),
    status: 'error',
    error: {
      type: 'FatalTurnLimitedError',
      message: 'Reached max session turns for this session. Increase the number of turns by specifying maxSessionTurns in settings.json.',
    },
    stats: stats(9000, 0, 300),
  });
  process.exit(53);
}
emit({ type: 'message', timestamp: now(), role: 'assistant', content: 'Gemini: done with ', delta: true });
emit({ type: 'message', timestamp: now(), role: 'assistant', content: prompt.split('\n')[0].slice(0, 60), delta: true });
const big = Number(process.env.FAKE_AGENT_TOKENS ?? 5_000_000);
emit({
  type: 'result',
  timestamp: now(),
  status: 'success',
  stats: m === 'token-overrun' ? stats(big, 0, 1000) : stats(18_432, 12_288, 912),
});
if (m === 'token-overrun') await hang();
process.exit(0);

/**
 * Sessions as 0.61.0 keeps them: `~/.gemini/projects.json` maps the working directory to a project
 * id (its base name in lower case, non-alphanumerics as `-`: /tmp/tmp.r9OdwNniDi is
 * `tmp-r9odwnnidi`), and each session is `~/.gemini/tmp/<project id>/chats/session-<YYYY-MM-DDTHH-MM>-<first
 * 8 of the id>.jsonl` whose first line holds `sessionId` and `projectHash` (sha256 of the
 * directory). `--resume <uuid>` looks only in the current directory's project; a session it
 * cannot find is `Error resuming session: Invalid session identifier "<id>".` with where it
 * searched, exit 42, before any event.
 */
function openSession(resumeId, text) {
  const home = path.join(process.env.HOME ?? os.homedir(), '.gemini');
  const cwd = process.cwd();
  const registry = path.join(home, 'projects.json');
  let projects = {};
  try {
    projects = JSON.parse(fs.readFileSync(registry, 'utf8')).projects ?? {};
  } catch {
    // No registry yet: the first session makes one.
  }
  const project =
    projects[cwd] ??
    path
      .basename(cwd)
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-');
  const chats = path.join(home, 'tmp', project, 'chats');
  const message = `${JSON.stringify({ $set: { messages: [{ type: 'user', content: [{ text }] }] } })}\n`;
  if (resumeId !== null) {
    const found = fs.existsSync(chats)
      ? fs.readdirSync(chats).find((f) => {
          const first = fs.readFileSync(path.join(chats, f), 'utf8').split('\n')[0];
          try {
            return JSON.parse(first).sessionId === resumeId;
          } catch {
            return false;
          }
        })
      : undefined;
    if (!found) {
      fail(
        `Error resuming session: Invalid session identifier "${resumeId}".\n  Searched for sessions in ${chats}.\n  Use --list-sessions to see available sessions, then use --resume {number}, --resume {uuid}, or --resume latest.`,
        42,
      );
    }
    const restored = fs.readFileSync(path.join(chats, found), 'utf8').split('\n').filter(Boolean).length - 1;
    fs.appendFileSync(path.join(chats, found), message);
    return { id: resumeId, restored };
  }
  const id = randomUUID();
  fs.mkdirSync(chats, { recursive: true });
  fs.writeFileSync(registry, JSON.stringify({ projects: { ...projects, [cwd]: project } }, null, 2));
  const stamp = new Date().toISOString().slice(0, 16).replace(':', '-');
  const meta = {
    sessionId: id,
    projectHash: createHash('sha256').update(cwd).digest('hex'),
    startTime: new Date().toISOString(),
    kind: 'main',
  };
  fs.writeFileSync(path.join(chats, `session-${stamp}-${id.slice(0, 8)}.jsonl`), `${JSON.stringify(meta)}\n${message}`);
  return { id, restored: 0 };
}
