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
// hang | token-overrun (one turn reporting FAKE_AGENT_TOKENS tokens, default 5,000,000) | develop (does
// what a develop run must: commits on feature/issue-<ISSUE_NUMBER>-codex, pushes it and opens a pull
// request through GITEA_URL with GITEA_TOKEN, as the model's shell commands would, with git and curl) |
// ask (a conversation: a new thread runs `baton ask "<question>"` as a command and ends its turn; a
// resumed one answers from the reply, saying how many rollout lines it found of its thread).
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { askBaton, emit, fail, hang, mode, question, readStdin, record, replyOf, sleep } from './fake-agent-kit.mjs';

// `codex exec --help` and `codex exec resume --help` of 0.171.0: each subcommand has its own
// options (resume has no --sandbox, --color, --cd, --profile, --oss, --add-dir); exec's options go
// before `resume`, and an exec option after it is `unexpected argument` (exit 2).
const EXEC_FLAGS = [
  '--json',
  '--skip-git-repo-check',
  '--dangerously-bypass-approvals-and-sandbox',
  '--dangerously-bypass-hook-trust',
  '--approve-for-me',
  '--ephemeral',
  '--oss',
  '--strict-config',
  '--worktree',
  '--trust',
  '--ignore-user-config',
  '--ignore-rules',
];
const EXEC_VALUED = {
  '-c': 'config',
  '--config': 'config',
  '--enable': 'enable',
  '--disable': 'disable',
  '--remote': 'remote',
  '--remote-auth-token-env': 'remote-auth-token-env',
  '-i': 'image',
  '--image': 'image',
  '-m': 'model',
  '--model': 'model',
  '--local-provider': 'local-provider',
  '-p': 'profile',
  '--profile': 'profile',
  '-s': 'sandbox',
  '--sandbox': 'sandbox',
  '-C': 'cd',
  '--cd': 'cd',
  '--add-dir': 'add-dir',
  '--thread-source': 'thread-source',
  '--cyber-access-program': 'cyber-access-program',
  '--output-schema': 'output-schema',
  '--color': 'color',
  '-o': 'output-last-message',
  '--output-last-message': 'output-last-message',
};
const RESUME_ONLY_FLAGS = ['--last', '--all'];
const NOT_IN_RESUME = ['-p', '--profile', '-s', '--sandbox', '-C', '--cd', '--add-dir', '--color', '--local-provider'];
const EXEC = {
  usage: 'codex exec [OPTIONS] [PROMPT]\n       codex exec [OPTIONS] <COMMAND> [ARGS]',
  flags: new Set(EXEC_FLAGS),
  valued: new Map(Object.entries(EXEC_VALUED)),
  // The first positional that names a subcommand ends exec's own options.
  subcommands: new Set(['resume', 'fork', 'review', 'help']),
};
const RESUME = {
  usage: 'codex exec resume [OPTIONS] [SESSION_ID] [PROMPT]',
  flags: new Set([...EXEC_FLAGS.filter((f) => !['--approve-for-me', '--oss'].includes(f)), ...RESUME_ONLY_FLAGS]),
  valued: new Map(Object.entries(EXEC_VALUED).filter(([name]) => !NOT_IN_RESUME.includes(name))),
  subcommands: new Set(),
};
const CHOICES = {
  sandbox: { placeholder: '--sandbox <SANDBOX_MODE>', values: ['read-only', 'workspace-write', 'danger-full-access'] },
  color: { placeholder: '--color <COLOR>', values: ['always', 'never', 'auto'] },
  'cyber-access-program': { placeholder: '--cyber-access-program <PROGRAM>', values: ['standard', 'daybreak_blue', 'daybreak_red'] },
};

function unexpected(arg, usage) {
  fail(
    `error: unexpected argument '${arg}' found\n\n  tip: to pass '${arg}' as a value, use '-- ${arg}'\n\nUsage: ${usage}\n\nFor more information, try '--help'.`,
    2,
  );
}

/** clap: options anywhere among the positionals until `--` or a subcommand; `--name=value` works. */
function parse(argv, spec, options = {}) {
  const positionals = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--') {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (arg === '-' || !arg.startsWith('-')) {
      if (positionals.length === 0 && spec.subcommands.has(arg)) return { options, positionals, subcommand: arg, rest: argv.slice(i + 1) };
      positionals.push(arg);
      continue;
    }
    const eq = arg.startsWith('--') ? arg.indexOf('=') : -1;
    const name = eq > 0 ? arg.slice(0, eq) : arg;
    if (spec.flags.has(name) && eq < 0) {
      options[name.slice(2)] = true;
      continue;
    }
    const key = spec.valued.get(name);
    if (!key) unexpected(eq > 0 ? name : arg, spec.usage);
    let value;
    if (eq > 0) value = arg.slice(eq + 1);
    else {
      if (i + 1 >= argv.length)
        fail(
          `error: a value is required for '${name} <${key.toUpperCase()}>' but none was supplied\n\nFor more information, try '--help'.`,
          2,
        );
      value = argv[++i];
    }
    const choice = CHOICES[key];
    if (choice && !choice.values.includes(value)) {
      fail(
        `error: invalid value '${value}' for '${choice.placeholder}'\n  [possible values: ${choice.values.join(', ')}]\n\nFor more information, try '--help'.`,
        2,
      );
    }
    options[key] = value;
  }
  return { options, positionals, subcommand: null, rest: [] };
}

const argv = process.argv.slice(2);
if (argv[0] !== 'exec') fail('fake-codex: only `codex exec` is emulated', 2);
const exec = parse(argv.slice(1), EXEC);
let options = exec.options;
let resume = null;
let promptArg = exec.positionals[0];
if (exec.subcommand === 'resume') {
  const sub = parse(exec.rest, RESUME, { ...exec.options });
  options = sub.options;
  resume = sub.positionals[0] ?? null;
  if (!resume) fail('Error: resume requires a SESSION_ID or --last', 1);
  promptArg = sub.positionals[1];
} else if (exec.subcommand) fail(`fake-codex: \`codex exec ${exec.subcommand}\` is not emulated`, 2);
let prompt = promptArg;
let promptSource = 'argument';
if (prompt === undefined || prompt === '-') {
  promptSource = 'stdin';
  prompt = readStdin();
  if (prompt.trim() === '') fail('No prompt provided via stdin.', 1);
} else if (!process.stdin.isTTY) {
  // "If stdin is piped and a prompt is also provided, stdin is appended as a `<stdin>` block".
  process.stderr.write('Reading additional input from stdin...\n');
  const piped = readStdin();
  if (piped.trim() !== '') prompt = `${prompt}\n\n<stdin>\n${piped.trimEnd()}\n</stdin>`;
}
if (!options.json) fail('fake-codex: only --json output is emulated', 2);
record({ agent: 'codex', prompt, promptSource, options, resume, model: options.model ?? 'gpt-5-codex' });

const { id: thread, restored } = openThread(resume, prompt);
emit({ type: 'thread.started', thread_id: thread });
emit({ type: 'turn.started' });
const m = mode();
const turnUsage = { input_tokens: 2_000, cached_input_tokens: 1_000, output_tokens: 100, reasoning_output_tokens: 0 };
if (m === 'ask' && resume === null) {
  const asked = askBaton(question());
  emit({
    type: 'item.completed',
    item: {
      id: 'item_0',
      type: 'command_execution',
      command: asked.command,
      aggregated_output: asked.output,
      exit_code: asked.ok ? 0 : 1,
      status: 'completed',
    },
  });
  emit({ type: 'item.completed', item: { id: 'item_1', type: 'agent_message', text: `I asked: ${question()}` } });
  emit({ type: 'turn.completed', usage: turnUsage });
  process.exit(asked.ok ? 0 : 1);
}
if (m === 'ask') {
  emit({
    type: 'item.completed',
    item: {
      id: 'item_0',
      type: 'agent_message',
      text: `Answered in thread ${thread} (${restored} rollout lines restored): ${replyOf(prompt)}`,
    },
  });
  emit({ type: 'turn.completed', usage: turnUsage });
  process.exit(0);
}
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
if (m === 'develop') openPullRequest();
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

/**
 * Sessions as 0.171.0 keeps them: `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<local time>-<thread
 * id>.jsonl` (CODEX_HOME defaults to ~/.codex), a `session_meta` line first, then the turn's
 * items. `resume <id>` finds the file by id whatever the working directory (seen with the real
 * CLI: a HOME holding only that sessions/ directory resumes); without it the CLI prints
 * `Error: thread/resume: thread/resume failed: no rollout found for thread id <id> (code -32600)`
 * and exits 1 before any event.
 */
function openThread(resumeId, text) {
  const home = process.env.CODEX_HOME ?? path.join(process.env.HOME ?? os.homedir(), '.codex');
  const sessions = path.join(home, 'sessions');
  const line = (type, payload) => `${JSON.stringify({ timestamp: new Date().toISOString(), type, payload })}\n`;
  const userMessage = line('response_item', { type: 'message', role: 'user', content: [{ type: 'input_text', text }] });
  if (resumeId !== null) {
    const found = findRollout(sessions, resumeId);
    if (!found) fail(`Error: thread/resume: thread/resume failed: no rollout found for thread id ${resumeId} (code -32600)`, 1);
    const restored = fs.readFileSync(found, 'utf8').split('\n').filter(Boolean).length;
    fs.appendFileSync(found, userMessage);
    return { id: resumeId, restored };
  }
  const id = randomUUID();
  const now = new Date();
  const pad = (n) => String(n).padStart(2, '0');
  const day = path.join(sessions, String(now.getFullYear()), pad(now.getMonth() + 1), pad(now.getDate()));
  const stamp = `${now.getFullYear()}-${pad(now.getMonth() + 1)}-${pad(now.getDate())}T${pad(now.getHours())}-${pad(now.getMinutes())}-${pad(now.getSeconds())}`;
  fs.mkdirSync(day, { recursive: true });
  fs.writeFileSync(
    path.join(day, `rollout-${stamp}-${id}.jsonl`),
    line('session_meta', { session_id: id, id, cwd: process.cwd(), originator: 'codex_exec', cli_version: '0.171.0', source: 'exec' }) +
      userMessage,
  );
  return { id, restored: 0 };
}

function findRollout(dir, id) {
  if (!fs.existsSync(dir)) return null;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      const found = findRollout(full, id);
      if (found) return found;
    } else if (entry.name.startsWith('rollout-') && entry.name.endsWith(`-${id}.jsonl`)) return full;
  }
  return null;
}

/** The develop stage's work, as the agent's own shell commands (git, curl) would do it. */
function openPullRequest() {
  const sh = (cmd, args) => execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
  const branch = `feature/issue-${process.env.ISSUE_NUMBER}-codex`;
  const base = sh('git', ['rev-parse', '--abbrev-ref', 'HEAD']);
  sh('git', ['checkout', '--quiet', '-b', branch]);
  fs.writeFileSync('CODEX.md', `Work for issue #${process.env.ISSUE_NUMBER}.\n`);
  sh('git', ['add', 'CODEX.md']);
  sh('git', ['-c', 'user.name=Codex', '-c', 'user.email=codex@example.invalid', 'commit', '--quiet', '-m', 'Work for the issue']);
  sh('git', ['push', '--quiet', 'origin', `HEAD:refs/heads/${branch}`]);
  // <gateway>/<owner>/<repo>.git: the repository the run is on.
  const [owner, repo] = sh('git', ['remote', 'get-url', 'origin'])
    .replace(/\.git$/, '')
    .split('/')
    .slice(-2);
  const answer = sh('curl', [
    '--silent',
    '--show-error',
    '--fail-with-body',
    '-X',
    'POST',
    '-H',
    `Authorization: token ${process.env.GITEA_TOKEN}`,
    '-H',
    'Content-Type: application/json',
    '--data',
    JSON.stringify({ head: branch, base, title: `Issue #${process.env.ISSUE_NUMBER}`, body: `Closes #${process.env.ISSUE_NUMBER}` }),
    `${process.env.GITEA_URL}/api/v1/repos/${owner}/${repo}/pulls`,
  ]);
  emit({
    type: 'item.completed',
    item: {
      id: 'item_pr',
      type: 'command_execution',
      command: 'curl …/pulls',
      aggregated_output: answer.slice(0, 200),
      exit_code: 0,
      status: 'completed',
    },
  });
}
