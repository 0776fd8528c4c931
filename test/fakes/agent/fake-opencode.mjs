#!/usr/bin/env node
// A stand-in for `opencode run --format json …` (OpenCode 1.18.33, opencode-ai): parses argv
// as its yargs parser does, joins the message words with stdin as it does, and prints its JSON
// lines `{type, timestamp, sessionID, …}` (SOURCES.md says what was checked and how).
//
//   unknown option          yargs strict: the command's help on stderr (no message), exit 1
//   no message, no stdin    stderr `Error: You must provide a message or a command`, exit 1
//   without --auto          every permission the agent asks for is auto-rejected
//
//   --session=<unknown id>  stderr `Error: Session not found`, exit 1
//
// FAKE_AGENT_MODE: success (default) | auth | rate-limited | server-error | unreachable | crash | hang |
// token-overrun (steps of FAKE_AGENT_TOKENS tokens, default 200,000, every 20 ms until killed) |
// unpriced (the success's steps, each reporting cost 0, as for a model OpenCode knows no price of) |
// ask (a conversation: a new session runs `baton ask "<question>"` with its bash tool and ends its
// turn; a resumed one answers from the reply, saying how many messages it found of its session).
//
// A step's cost is what OpenCode computes (Session.getUsage: the tokens at the model's `cost` per
// million from models.dev or the provider's config, 0 without one): the success's steps are priced
// at anthropic/claude-sonnet-4-5's list price (3 in, 0.3 cache read, 15 out).
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { askBaton, emit, fail, hang, mode, question, readStdin, record, replyOf, sleep } from './fake-agent-kit.mjs';

// `opencode run --help` of 1.18.33 (yargs, strict, with the global --print-logs, --log-level, --pure).
const FLAGS = new Map([
  ['--auto', 'auto'],
  ['--print-logs', 'print-logs'],
  ['--pure', 'pure'],
  ['-c', 'continue'],
  ['--continue', 'continue'],
  ['--fork', 'fork'],
  ['--share', 'share'],
  ['--thinking', 'thinking'],
  ['-i', 'interactive'],
  ['--interactive', 'interactive'],
]);
const VALUED = new Map([
  ['--format', 'format'],
  ['-m', 'model'],
  ['--model', 'model'],
  ['-s', 'session'],
  ['--session', 'session'],
  ['--agent', 'agent'],
  ['--command', 'command'],
  ['--log-level', 'log-level'],
  ['--title', 'title'],
  ['--variant', 'variant'],
  ['--dir', 'dir'],
  ['-f', 'file'],
  ['--file', 'file'],
  ['--attach', 'attach'],
  ['-p', 'password'],
  ['--password', 'password'],
  ['-u', 'username'],
  ['--username', 'username'],
  ['--port', 'port'],
]);
const CHOICES = { format: ['default', 'json'], 'log-level': ['DEBUG', 'INFO', 'WARN', 'ERROR'] };

const USAGE = `opencode run [message..]

run opencode with a message

Positionals:
  message  message to send                                                     [array] [default: []]
`;

/**
 * The CLI's yargs `.fail()`: for `Unknown argument…`, `Invalid values:` and `Not enough non-option
 * arguments` it shows the command's help on stderr and nothing else (no message), then exits 1.
 */
const usageError = () => fail(USAGE, 1);

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
    if (!key) usageError();
    // A string option with nothing after it is "" (`-m` alone runs the default model).
    const value = eq > 0 ? arg.slice(eq + 1) : (argv[++i] ?? '');
    if (CHOICES[key] && !CHOICES[key].includes(value)) usageError();
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

const { id: sessionID, restored } = openSession(options.session || null, message);
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
// Seen with 1.18.33 and no network.
if (m === 'unreachable') {
  error('APIError', {
    message: 'Cannot connect to API: Unable to connect. Is the computer able to access the url?',
    isRetryable: true,
    metadata: { url: 'https://opencode.ai/zen/v1/chat/completions' },
  });
}
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
if (m === 'ask') {
  const finish = step(2_000, 100, 0.0075, 1_000);
  if (!options.session) {
    const asked = askBaton(question());
    out('tool_use', {
      part: part('tool', {
        callID: 'toolu_ask',
        tool: 'bash',
        state: {
          status: asked.ok ? 'completed' : 'error',
          input: { command: asked.command },
          ...(asked.ok ? { output: asked.output, title: asked.command } : { error: asked.output }),
          metadata: {},
          time: { start: 1, end: 2 },
        },
      }),
    });
  }
  const said = options.session
    ? `Answered in session ${sessionID} (${restored} messages restored): ${replyOf(message)}`
    : `I asked: ${question()}`;
  out('text', { part: part('text', { text: said, time: { start: Date.now(), end: Date.now() } }) });
  finish();
  process.exit(0);
}
if (m === 'token-overrun') {
  const big = Number(process.env.FAKE_AGENT_TOKENS ?? 200_000);
  for (;;) {
    step(big, 100, 0.5)();
    await sleep(20);
  }
}
// 11,020 × 3 + 180 × 15 per million; then 402 × 3 + 11,000 × 0.3 + 95 × 15.
const priced = (usd) => (m === 'unpriced' ? 0 : usd);
const finish1 = step(11_020, 180, priced(0.03576), 0);
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
const finish2 = step(402, 95, priced(0.005931), 11_000);
out('text', {
  part: part('text', { text: `OpenCode: done with ${message.split('\n')[0].slice(0, 60)}`, time: { start: Date.now(), end: Date.now() } }),
});
finish2();
process.exit(0);

/**
 * Sessions live in `$XDG_DATA_HOME/opencode/opencode.db` (SQLite, ~/.local/share by default) in
 * the real CLI; the fake keeps one JSON file per session under `storage/session/` there instead,
 * which is enough for a restore of that directory to resume. An unknown `--session` is `Error:
 * Session not found` on stderr, exit 1, before any event (seen with 1.18.33).
 */
function openSession(resumeId, text) {
  const data = path.join(process.env.XDG_DATA_HOME ?? path.join(process.env.HOME ?? os.homedir(), '.local', 'share'), 'opencode');
  const dir = path.join(data, 'storage', 'session');
  if (resumeId !== null) {
    const file = path.join(dir, `${path.basename(resumeId)}.json`);
    if (!fs.existsSync(file)) fail('Error: Session not found', 1);
    const session = JSON.parse(fs.readFileSync(file, 'utf8'));
    const restored = session.messages.length;
    session.messages.push(text);
    fs.writeFileSync(file, JSON.stringify(session));
    return { id: resumeId, restored };
  }
  // `ses_` and 26 more characters, as the real ids (ses_dc7e560a9ffe4E4s4yOmq45Ega).
  const id = `ses_${randomBytes(13).toString('hex')}`;
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, `${id}.json`), JSON.stringify({ id, directory: process.cwd(), messages: [text] }));
  return { id, restored: 0 };
}
