#!/usr/bin/env node
// A stand-in for `codex exec --json …` (OpenAI Codex CLI 0.171.0, @openai/codex): parses argv
// as its clap parser does and prints the JSONL events of `--json` (SOURCES.md says what was
// checked against the real binary and how).
//
//   codex exec [OPTIONS] [PROMPT]              PROMPT absent or `-`: read from stdin
//   codex exec [OPTIONS] resume SESSION_ID [PROMPT]
//   unknown option          stderr `error: unexpected argument '--bogus' found`, exit 2
//   bad --sandbox value     stderr `error: invalid value 'x' for '--sandbox <SANDBOX_MODE>'`, exit 2
//   empty stdin             stderr `No prompt provided via stdin.`, exit 1
//   `--` ends the options; `--name=value` works.
//
// FAKE_AGENT_MODE: success (default) | auth | rate-limited | unreachable | server-error | crash |
// hang | token-overrun (one turn reporting FAKE_AGENT_TOKENS tokens, default 5,000,000).
import { emit, fail, hang, mode, readStdin, record, sleep } from './fake-agent-kit.mjs';

const FLAGS = new Set([
  '--json',
  '--skip-git-repo-check',
  '--dangerously-bypass-approvals-and-sandbox',
  '--ephemeral',
  '--oss',
  '--full-auto',
]);
const VALUED = new Map([
  ['-m', 'model'],
  ['--model', 'model'],
  ['-s', 'sandbox'],
  ['--sandbox', 'sandbox'],
  ['-c', 'config'],
  ['--config', 'config'],
  ['-C', 'cd'],
  ['--cd', 'cd'],
  ['--color', 'color'],
  ['-o', 'output-last-message'],
  ['--output-last-message', 'output-last-message'],
  ['-p', 'profile'],
  ['--profile', 'profile'],
]);
const SANDBOX = ['read-only', 'workspace-write', 'danger-full-access'];
const COLOR = ['always', 'never', 'auto'];

function parse(argv) {
  const options = {};
  const positionals = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--') {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (arg === '-' || !arg.startsWith('-')) {
      positionals.push(arg);
      continue;
    }
    const eq = arg.startsWith('--') ? arg.indexOf('=') : -1;
    const name = eq > 0 ? arg.slice(0, eq) : arg;
    if (FLAGS.has(name) && eq < 0) {
      options[name.slice(2)] = true;
      continue;
    }
    const key = VALUED.get(name);
    if (!key)
      fail(`error: unexpected argument '${arg}' found\n\nUsage: codex exec [OPTIONS] [PROMPT]\n\nFor more information, try '--help'.`, 2);
    let value;
    if (eq > 0) value = arg.slice(eq + 1);
    else {
      if (i + 1 >= argv.length) fail(`error: a value is required for '${name} <${key.toUpperCase()}>' but none was supplied`, 2);
      value = argv[++i];
    }
    if (key === 'sandbox' && !SANDBOX.includes(value)) {
      fail(`error: invalid value '${value}' for '--sandbox <SANDBOX_MODE>'\n  [possible values: ${SANDBOX.join(', ')}]`, 2);
    }
    if (key === 'color' && !COLOR.includes(value)) fail(`error: invalid value '${value}' for '--color <COLOR>'`, 2);
    options[key] = value;
  }
  return { options, positionals };
}

const argv = process.argv.slice(2);
if (argv[0] !== 'exec') fail('fake-codex: only `codex exec` is emulated', 2);
const { options, positionals } = parse(argv.slice(1));
let resume = null;
let promptArg = positionals[0];
if (positionals[0] === 'resume') {
  resume = positionals[1] ?? null;
  if (!resume) fail('error: the session id is required (or --last)', 2);
  promptArg = positionals[2];
}
let prompt = promptArg;
let promptSource = 'argument';
if (prompt === undefined || prompt === '-') {
  promptSource = 'stdin';
  prompt = readStdin();
  if (prompt.trim() === '') fail('No prompt provided via stdin.', 1);
}
if (!options.json) fail('fake-codex: only --json output is emulated', 2);
record({ agent: 'codex', prompt, promptSource, options, resume, model: options.model ?? 'gpt-5-codex' });

const thread = resume ?? '0199a213-81c0-7800-8aa1-bbab2a035a53';
emit({ type: 'thread.started', thread_id: thread });
emit({ type: 'turn.started' });
const m = mode();
const reconnect = (n, why) => emit({ type: 'error', message: `Reconnecting... ${n}/5 (${why})` });
if (m === 'auth') {
  emit({
    type: 'error',
    message:
      'unexpected status 401 Unauthorized: Incorrect API key provided: sk-fake***. You can find your API key at https://platform.openai.com/account/api-keys.',
  });
  emit({ type: 'turn.failed', error: { message: 'unexpected status 401 Unauthorized: Incorrect API key provided' } });
  process.exit(1);
}
if (m === 'rate-limited') {
  for (let n = 2; n <= 5; n++) reconnect(n, 'exceeded retry limit, last status: 429 Too Many Requests');
  emit({ type: 'turn.failed', error: { message: 'exceeded retry limit, last status: 429 Too Many Requests' } });
  process.exit(1);
}
if (m === 'server-error') {
  emit({ type: 'turn.failed', error: { message: 'unexpected status 503 Service Unavailable' } });
  process.exit(1);
}
if (m === 'unreachable') {
  for (let n = 2; n <= 5; n++)
    reconnect(n, 'stream disconnected before completion: failed to lookup address information: Name does not resolve');
  emit({
    type: 'item.completed',
    item: {
      id: 'item_0',
      type: 'error',
      message:
        'Falling back from WebSockets to HTTPS transport. stream disconnected before completion: failed to lookup address information: Name does not resolve',
    },
  });
  emit({ type: 'error', message: 'Reconnecting... waiting for network (Connection failed: error sending request)' });
  emit({
    type: 'turn.failed',
    error: { message: 'stream disconnected before completion: error sending request for url (https://api.openai.com/v1/responses)' },
  });
  process.exit(1);
}
emit({ type: 'item.completed', item: { id: 'item_0', type: 'reasoning', text: '**Reading the issue**' } });
emit({
  type: 'item.started',
  item: { id: 'item_1', type: 'command_execution', command: 'bash -lc ls', aggregated_output: '', exit_code: null, status: 'in_progress' },
});
emit({
  type: 'item.completed',
  item: {
    id: 'item_1',
    type: 'command_execution',
    command: 'bash -lc ls',
    aggregated_output: 'README.md\n',
    exit_code: 0,
    status: 'completed',
  },
});
if (m === 'crash') process.exit(1);
if (m === 'hang') await hang();
emit({
  type: 'item.completed',
  item: { id: 'item_2', type: 'file_change', changes: [{ path: 'src/app.ts', kind: 'update' }], status: 'completed' },
});
emit({
  type: 'item.completed',
  item: { id: 'item_3', type: 'agent_message', text: `Codex: done with ${prompt.split('\n')[0].slice(0, 60)}` },
});
await sleep(5);
const big = Number(process.env.FAKE_AGENT_TOKENS ?? 5_000_000);
const usage =
  m === 'token-overrun'
    ? { input_tokens: big, cached_input_tokens: 0, output_tokens: 1000, reasoning_output_tokens: 0 }
    : { input_tokens: 24_763, cached_input_tokens: 24_448, output_tokens: 1_220, reasoning_output_tokens: 768 };
emit({ type: 'turn.completed', usage });
if (m === 'token-overrun') await hang();
process.exit(0);
