#!/usr/bin/env node
// A stand-in for `opencode run --format json …` (OpenCode 1.18.33, opencode-ai): parses argv
// as its yargs parser does, joins the message words with stdin as it does, and prints its JSON
// lines `{type, timestamp, sessionID, …}` (SOURCES.md says what was checked and how).
//
//   unknown option          yargs strict: stderr `Unknown argument: bogus`, exit 1
//   no message, no stdin    stderr `Error: You must provide a message or a command`, exit 1
//   without --auto          every permission the agent asks for is auto-rejected
//
// FAKE_AGENT_MODE: success (default) | auth | rate-limited | server-error | crash | hang |
// token-overrun (steps of FAKE_AGENT_TOKENS tokens, default 200,000, every 20 ms until killed).
import { emit, fail, hang, mode, readStdin, record, sleep } from './fake-agent-kit.mjs';

const FLAGS = new Map([
  ['--auto', 'auto'],
  ['--print-logs', 'print-logs'],
  ['--pure', 'pure'],
  ['-c', 'continue'],
  ['--continue', 'continue'],
  ['--fork', 'fork'],
  ['--thinking', 'thinking'],
]);
const VALUED = new Map([
  ['--format', 'format'],
  ['-m', 'model'],
  ['--model', 'model'],
  ['-s', 'session'],
  ['--session', 'session'],
  ['--agent', 'agent'],
  ['--log-level', 'log-level'],
  ['--title', 'title'],
  ['--variant', 'variant'],
  ['--dir', 'dir'],
]);

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
      options[FLAGS.get(name)] = true;
      continue;
    }
    const key = VALUED.get(name);
    if (!key)
      fail(`opencode run [message..]\n\nrun opencode with a message\n\nUnknown argument: ${arg.replace(/^-+/, '').split('=')[0]}`, 1);
    const value = eq > 0 ? arg.slice(eq + 1) : argv[++i];
    if (key === 'format' && !['default', 'json'].includes(value)) {
      fail(`Invalid values:\n  Argument: format, Given: "${value}", Choices: "default", "json"`, 1);
    }
    options[key] = value;
  }
  return { options, positionals };
}

const argv = process.argv.slice(2);
if (argv[0] !== 'run') fail('fake-opencode: only `opencode run` is emulated', 2);
const { options, positionals } = parse(argv.slice(1));
const stdin = readStdin();
const words = positionals.join(' ');
const message = stdin ? (words ? `${stdin}\n${words}` : stdin) : words;
if (message.trim().length === 0) fail('Error: You must provide a message or a command', 1);
if (options.format !== 'json') fail('fake-opencode: only --format json is emulated', 2);
record({
  agent: 'opencode',
  prompt: message,
  promptSource: stdin ? 'stdin' : 'argument',
  options,
  resume: options.session ?? null,
  model: options.model ?? 'opencode/big-pickle',
});

const sessionID = options.session ?? 'ses_dcb6e00aeffei8fI42d9eG7ixN';
const messageID = 'msg_2349b1f66001Q5fh0PMOJk9A7w';
let n = 0;
const part = (type, fields) => ({ id: `prt_${String(++n).padStart(4, '0')}`, sessionID, messageID, type, ...fields });
const out = (type, fields) => emit({ type, timestamp: Date.now(), sessionID, ...fields });
const error = (name, data) => {
  out('error', { error: { name, data } });
  process.exit(1);
};
const m = mode();
if (m === 'auth') error('ProviderAuthError', { providerID: 'anthropic', message: 'invalid x-api-key' });
if (m === 'rate-limited') error('APIError', { message: 'Rate limit exceeded: 429 Too Many Requests', statusCode: 429, isRetryable: true });
if (m === 'server-error') error('APIError', { message: 'Overloaded', statusCode: 529, isRetryable: true });
const step = (input, output, cost, read = 0) => {
  out('step_start', { part: part('step-start', { snapshot: '4b825dc642cb6eb9a060e54bf8d69288fbee4904' }) });
  return () =>
    out('step_finish', {
      part: part('step-finish', {
        reason: 'tool-calls',
        snapshot: '4b825dc6',
        cost,
        tokens: { input, output, reasoning: 0, cache: { read, write: 0 } },
      }),
    });
};
if (m === 'token-overrun') {
  const big = Number(process.env.FAKE_AGENT_TOKENS ?? 200_000);
  for (;;) {
    step(big, 100, 0.5)();
    await sleep(20);
  }
}
const finish1 = step(11_020, 180, 0.0123, 0);
out('tool_use', {
  part: part('tool', {
    callID: 'toolu_01',
    tool: 'bash',
    state: { status: 'completed', input: { command: 'ls' }, output: 'README.md\n', title: 'ls', metadata: {}, time: { start: 1, end: 2 } },
  }),
});
finish1();
if (m === 'crash') process.exit(1);
if (m === 'hang') await hang();
const finish2 = step(402, 95, 0.0042, 11_000);
out('text', {
  part: part('text', { text: `OpenCode: done with ${message.split('\n')[0].slice(0, 60)}`, time: { start: Date.now(), end: Date.now() } }),
});
finish2();
process.exit(0);
