#!/usr/bin/env node
// A stand-in for `claude -p --output-format stream-json --verbose …` (Claude Code 2.1.197) that
// prints NDJSON shaped as in ../shared/reference/claude-code/STREAM-JSON.md and reads its
// arguments the way the real CLI does, so tests catch argv mistakes a runner could make.
//
// Argument parsing, as observed with the real CLI (node_modules/@anthropic-ai/claude-code 2.1.197,
// Linux x64, no network, HOME in a temp dir, IS_SANDBOX=1), all emulated below:
//   claude -p … "- first step"            stderr `error: unknown option '- first step'`, exit 1, no stream
//   claude -p … --bogus hi                stderr `error: unknown option '--bogus'`, exit 1
//   claude -p … --model                   stderr `error: option '--model <model>' argument missing`, exit 1
//   claude -p … --output-format bogus     stderr `error: option '--output-format <format>' argument 'bogus' is
//                                         invalid. Allowed choices are text, json, stream-json.`, exit 1
//   claude -p --output-format stream-json hi (no --verbose)
//                                         stderr `Error: When using --print, --output-format=stream-json requires --verbose`, exit 1
//   claude -p … -- "- first step"         runs it as a prompt (`--` ends the options)
//   claude -p … --model -x -- hi          `-x` is the model: an option's value is taken even when it starts with `-`
//   claude -p … --model=opus -- hi        `--name=value` works
//   claude -p … --allowedTools Read "hello"   the variadic option swallows "hello": no prompt is left, stdin is
//                                         read; empty stdin → stderr `Error: Input must be provided either through
//                                         stdin or as a prompt argument when using --print`, exit 1
//   claude -p … -- a b                    extra positional arguments are ignored; the prompt is "a"
//   claude -p -d …                        short flags combine (`-pd`)
//   claude -p … -- "/nosuchcommand"       init, a synthetic assistant message and
//                                         `{"subtype":"success","is_error":false,"num_turns":0,"result":"Unknown command: /nosuchcommand"}`,
//                                         exit 0; the same from stdin ("/nosuchcommand\n"); " /x" or "\n/x" is a
//                                         normal prompt (only the very first character counts)
//   echo "   " | claude -p …              whitespace-only stdin: no output at all, exit 0
//   --dangerously-skip-permissions        init `permissionMode: "bypassPermissions"`; otherwise `"default"`
//   --model opus                          init `model` is the resolved name (the fake echoes the value)
//   --mcp-config A B                      variadic; each a JSON string or a file; a missing file is refused
//                                         (see mcpServers below); init lists the servers as `pending`
// Not emulated: slash commands that exist (`.claude/commands/<name>.md` would run; the fake knows
// none), the root check of --dangerously-skip-permissions (covered by agent-real-claude.test.ts),
// output formats other than stream-json, and interactive mode (the fake requires -p).
//
// The behaviour after parsing is picked by FAKE_CLAUDE_MODE:
//
//   success (default)   init, assistant/tool turns, final result subtype success
//   noisy-success       like success, with garbage lines, unknown message types and api_retry
//   legacy-success      old CLI shape: result with `total_cost`, no modelUsage
//   error_during_execution | error_max_turns | error_max_budget_usd | error_max_structured_output_retries
//                       a result with that subtype, `errors`, and no `result` field (exit 1)
//   api-error           subtype success with is_error true and api_error_status 529 (exit 1)
//   rate-limited        the same with api_error_status 429 and a rate_limit_error text (exit 1)
//   legacy-overloaded   an older CLI's 529 (before api_error_status, CLI < 2.1.110): only the
//                       text `API Error: 529 {"type":"error","error":{"type":"overloaded_error",…}}`,
//                       as CLI 2.1.4 printed it (freeideas/vecsum, a public log of its output)
//   connection-error    no network after the CLI's own retries: `API Error: Connection error.`,
//                       no api_error_status (the text public tests of CLI wrappers quote)
//   not-logged-in       what the real CLI prints without credentials (exit 1); also whatever
//                       the mode when ~/.claude/.credentials.json exists but cannot be read
//   no-is-error         a result without is_error (cannot be told from a failure)
//   unknown-skill       the zero-cost "success" of reference §4(b): num_turns 2, `Unknown skill: …`
//   garbage             only non-JSON lines (exit 0)
//   crash               init and one assistant message, then exits 1 mid-stream
//   hang                init, then sleeps until signalled
//   hang-ignore-term    like hang but ignores SIGTERM (only SIGKILL ends it)
//   token-overrun       assistant messages with large usage, every 20 ms, until killed
//   flood               FAKE_CLAUDE_FLOOD_MESSAGES assistant messages (default: as many as fill
//                       FAKE_CLAUDE_FLOOD_BYTES, default 50 MB) of FAKE_CLAUDE_FLOOD_TEXT_BYTES
//                       (default 1,000) each, written as fast as the pipe takes them, then a result
//   no-output           prints nothing; exits with FAKE_CLAUDE_EXIT (default 0)
//   ask                 a conversation: runs `baton ask "<FAKE_CLAUDE_QUESTION>"` (found on PATH, as
//                       the agent's Bash tool would) and ends its turn; resumed (`--resume <id>`), it
//                       answers from the reply and the restored session (FAKE_CLAUDE_ASK_TURNS, default
//                       1: how many turns ask before one answers)
//   ask-mcp             the same conversation, asking through the `ask` tool of the MCP server named
//                       `baton` in --mcp-config (tool `mcp__baton__ask`): the fake starts the server and
//                       speaks MCP to it as the real CLI does; without the server the tool does not
//                       exist, and without permission (neither bypassPermissions nor the tool in
//                       --allowedTools) print mode refuses the call and lists it in permission_denials
// Without FAKE_CLAUDE_MODE the mode may come from `.fake-claude.json` in the working directory
// (the repository): {"modeByIssue": {"<ISSUE_NUMBER>": "<mode>"}, "question": "…", "askTurns": N,
// "answerDelayMs": N},
// so one server's runs can behave differently per issue.
//
// Sessions, as Claude Code keeps them: each session is a transcript
// $HOME/.claude/projects/<cwd with every non-alphanumeric character as "-">/<session id>.jsonl
// (lossless-claude/lcm#534: "every non-alphanumeric character replaced by -, leading dash kept";
// anthropics/claude-code#9221, #24067 and chadbyte/clay#182 for "/", " ", "_" and "." each), one
// JSON entry per line ({type: user|assistant, message, sessionId, cwd, uuid, parentUuid,
// timestamp}), written as the turn goes. A new session gets a random UUID (or --session-id).
// `--resume <id>` reads that file for the current working directory; when it is not there the CLI
// prints one result `{"subtype":"error_during_execution","is_error":true,"num_turns":0,
// "errors":["No conversation found with session ID: <id>"],…}` on stdout, the same text on
// stderr, and exits 1 (anthropics/claude-code#62851; joewongjc/feishu-claude-code#15), which is
// also what a session recorded in another directory gets (PostHog/code#1010: the lookup is by
// cwd). A resumed session keeps its id and appends to its file. All of this was also observed
// with the real CLI 2.1.197 (no credentials, HOME in a temp dir): a first `-p` turn wrote
// ~/.claude/projects/-tmp-ccwork-my-proj-x/<uuid>.jsonl for cwd /tmp/ccwork/my_proj.x (entries
// `queue-operation`, `user` with `cwd` and `sessionId`, `attachment`, `assistant`, `last-prompt`);
// `--resume <uuid>` from that cwd found it (init with the same session_id); from another cwd, or
// with an unknown id, it answered as above.
//
// FAKE_CLAUDE_RECORD=<file> writes {argv, prompt, promptSource, options, cwd, env facts} there.
import { spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/** The options of the real CLI that matter here; `value`: none, one (required) or variadic. */
const OPTIONS = [
  { names: ['-p', '--print'], value: 'none' },
  { names: ['-d', '--debug'], value: 'none' },
  { names: ['-c', '--continue'], value: 'none' },
  { names: ['--verbose'], value: 'none' },
  { names: ['--dangerously-skip-permissions'], value: 'none' },
  { names: ['--include-partial-messages'], value: 'none' },
  { names: ['--output-format'], value: 'one', placeholder: '<format>', choices: ['text', 'json', 'stream-json'] },
  { names: ['--input-format'], value: 'one', placeholder: '<format>', choices: ['text', 'stream-json'] },
  { names: ['--model'], value: 'one', placeholder: '<model>' },
  { names: ['--fallback-model'], value: 'one', placeholder: '<model>' },
  { names: ['--max-turns'], value: 'one', placeholder: '<turns>' },
  { names: ['--permission-mode'], value: 'one', placeholder: '<mode>' },
  { names: ['--append-system-prompt'], value: 'one', placeholder: '<prompt>' },
  { names: ['--system-prompt'], value: 'one', placeholder: '<prompt>' },
  { names: ['--settings'], value: 'one', placeholder: '<file-or-json>' },
  { names: ['--session-id'], value: 'one', placeholder: '<uuid>' },
  { names: ['-r', '--resume'], value: 'one', placeholder: '[value]' },
  { names: ['--allowedTools', '--allowed-tools'], value: 'variadic', placeholder: '<tools...>' },
  { names: ['--disallowedTools', '--disallowed-tools'], value: 'variadic', placeholder: '<tools...>' },
  { names: ['--add-dir'], value: 'variadic', placeholder: '<directories...>' },
  { names: ['--mcp-config'], value: 'variadic', placeholder: '<configs...>' },
];

function fail(message) {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}

/** Commander-style parsing: what the real CLI's parser accepts, refuses and swallows. */
function parseArgs(argv) {
  const options = {};
  const positionals = [];
  const find = (name) => OPTIONS.find((o) => o.names.includes(name));
  const key = (option) => option.names.at(-1).replace(/^--/, '');
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--') {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (!arg.startsWith('-') || arg === '-') {
      positionals.push(arg);
      continue;
    }
    // Combined short flags: `-pd`.
    if (/^-[a-zA-Z]{2,}$/.test(arg)) {
      const flags = [...arg.slice(1)].map((c) => find(`-${c}`));
      if (flags.every((f) => f && f.value === 'none')) {
        for (const f of flags) options[key(f)] = true;
        continue;
      }
    }
    const eq = arg.startsWith('--') ? arg.indexOf('=') : -1;
    const name = eq > 0 ? arg.slice(0, eq) : arg;
    const option = find(name);
    if (!option) fail(`error: unknown option '${arg}'`);
    const label = `${option.names.join(', ')} ${option.placeholder ?? ''}`.trim();
    if (option.value === 'none') {
      options[key(option)] = true;
      continue;
    }
    let values;
    if (eq > 0) values = [arg.slice(eq + 1)];
    else if (option.value === 'one') {
      // A required value is taken whatever it looks like (`--model -x`).
      if (i + 1 >= argv.length) fail(`error: option '${label}' argument missing`);
      values = [argv[++i]];
    } else {
      values = [];
      while (i + 1 < argv.length && !argv[i + 1].startsWith('-')) values.push(argv[++i]);
      if (values.length === 0) fail(`error: option '${label}' argument missing`);
    }
    if (option.choices && !option.choices.includes(values[0])) {
      fail(`error: option '${label}' argument '${values[0]}' is invalid. Allowed choices are ${option.choices.join(', ')}.`);
    }
    options[key(option)] = option.value === 'variadic' ? [...(options[key(option)] ?? []), ...values] : values[0];
  }
  return { options, positionals };
}

const args = process.argv.slice(2);
const { options, positionals } = parseArgs(args);
if (!options.print) {
  process.stderr.write('fake-claude: only print mode (-p) is emulated\n');
  process.exit(2);
}
const outputFormat = options['output-format'] ?? 'text';
if (outputFormat === 'stream-json' && !options.verbose) {
  fail('Error: When using --print, --output-format=stream-json requires --verbose');
}
if (outputFormat !== 'stream-json') {
  process.stderr.write(`fake-claude: only --output-format stream-json is emulated, got ${outputFormat}\n`);
  process.exit(2);
}

let prompt = positionals[0];
let promptSource = 'argument';
if (prompt === undefined) {
  promptSource = 'stdin';
  prompt = process.stdin.isTTY ? '' : fs.readFileSync(0, 'utf8');
  if (prompt === '') fail('Error: Input must be provided either through stdin or as a prompt argument when using --print');
  if (prompt.trim() === '') process.exit(0);
}

/**
 * `--mcp-config <configs...>`: each value is a JSON string or a file holding one, merged into one
 * set of servers. As observed with the real CLI 2.1.197: a value that is not JSON is a file path
 * (relative to the working directory), and one that is not there is refused before anything
 * runs: stderr `Error: Invalid MCP configuration:\nMCP config file not found: <path>`, exit 1,
 * no stream. Two JSON values give both servers; each starts with the CLI's own environment
 * (PATH lookup included) plus its `env`, in the CLI's working directory.
 */
function mcpServers(values = []) {
  const servers = {};
  for (const value of values) {
    let config;
    try {
      config = JSON.parse(value);
    } catch {
      const file = path.resolve(process.cwd(), value);
      try {
        config = JSON.parse(fs.readFileSync(file, 'utf8'));
      } catch {
        fail(`Error: Invalid MCP configuration:\nMCP config file not found: ${file}`);
      }
    }
    Object.assign(servers, config?.mcpServers ?? {});
  }
  return servers;
}
const servers = mcpServers(options['mcp-config']);

/**
 * A login file that is there but cannot be read (a 0600 file of another user) is no login: the
 * real CLI then answers as it does without credentials. A missing file is left to the mode, so
 * suites that give no login at all keep their answers.
 */
function loginUnreadable() {
  const file = `${process.env.HOME ?? ''}/.claude/.credentials.json`;
  try {
    fs.accessSync(file, fs.constants.R_OK);
    return false;
  } catch (err) {
    return err.code !== 'ENOENT';
  }
}
/** `.fake-claude.json` of the repository: a mode per issue, for suites whose server runs many. */
function repositorySettings() {
  try {
    return JSON.parse(fs.readFileSync(path.join(process.cwd(), '.fake-claude.json'), 'utf8'));
  } catch {
    return {};
  }
}
const settings = repositorySettings();
const mode = loginUnreadable()
  ? 'not-logged-in'
  : (process.env.FAKE_CLAUDE_MODE ?? settings.modeByIssue?.[process.env.ISSUE_NUMBER ?? ''] ?? 'success');

const projectDir = path.join(process.env.HOME ?? '/nonexistent', '.claude', 'projects', process.cwd().replace(/[^A-Za-z0-9]/g, '-'));
const resumed = options.resume;
if (resumed !== undefined) {
  const file = path.join(projectDir, `${resumed}.jsonl`);
  const entries = fs.existsSync(file)
    ? fs
        .readFileSync(file, 'utf8')
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => JSON.parse(l))
    : null;
  if (!entries || entries.length === 0 || entries.some((e) => e.cwd !== undefined && e.cwd !== process.cwd())) {
    // As the real CLI 2.1.197 answers (observed): one zero result on stdout, the text on stderr, exit 1.
    const text = `No conversation found with session ID: ${resumed}`;
    process.stdout.write(
      `${JSON.stringify({
        type: 'result',
        subtype: 'error_during_execution',
        duration_ms: 0,
        duration_api_ms: 0,
        is_error: true,
        num_turns: 0,
        stop_reason: null,
        session_id: resumed,
        total_cost_usd: 0,
        usage: { input_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 0 },
        modelUsage: {},
        permission_denials: [],
        uuid: randomUUID(),
        errors: [text],
      })}\n`,
    );
    process.stderr.write(`${text}\n`);
    process.exit(1);
  }
}
const session = resumed ?? options['session-id'] ?? randomUUID();
const sessionFile = path.join(projectDir, `${session}.jsonl`);
/** The session's entries so far (a resumed session's earlier turns). */
const earlier = resumed
  ? fs
      .readFileSync(sessionFile, 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l))
  : [];
let parentUuid = earlier.at(-1)?.uuid ?? null;
/** Appends one entry to the session's transcript, as the real CLI does while the turn goes. */
function keep(type, message) {
  if (mode === 'flood' || !process.env.HOME) return;
  const uuid = randomUUID();
  try {
    fs.mkdirSync(projectDir, { recursive: true });
    const entry = {
      type,
      message,
      sessionId: session,
      cwd: process.cwd(),
      uuid,
      parentUuid,
      timestamp: new Date().toISOString(),
      version: '2.1.197',
    };
    fs.appendFileSync(sessionFile, `${JSON.stringify(entry)}\n`);
    parentUuid = uuid;
  } catch {
    // An unwritable HOME: the real CLI goes on without its transcript too.
  }
}
const permissionMode = options['dangerously-skip-permissions'] ? 'bypassPermissions' : (options['permission-mode'] ?? 'default');
const model = options.model ?? 'claude-fake-1';
/** Tool calls print mode refused, as the result's `permission_denials` lists them. */
const denials = [];

if (process.env.FAKE_CLAUDE_RECORD) {
  fs.writeFileSync(
    process.env.FAKE_CLAUDE_RECORD,
    JSON.stringify({
      argv: args,
      prompt,
      promptSource,
      options,
      permissionMode,
      model,
      cwd: process.cwd(),
      hasAnthropicApiKey: 'ANTHROPIC_API_KEY' in process.env,
      hasCallbackToken: 'CALLBACK_TOKEN' in process.env,
      oauthToken: process.env.CLAUDE_CODE_OAUTH_TOKEN ?? null,
      giteaToken: process.env.GITEA_TOKEN ?? null,
      issueNumber: process.env.ISSUE_NUMBER ?? null,
    }),
  );
}

const emit = (message) => {
  if (message.type === 'assistant' || message.type === 'user') keep(message.type, message.message);
  process.stdout.write(`${JSON.stringify(message)}\n`);
};
const usage = (input, output, cacheRead = 0, cacheCreation = 0) => ({
  input_tokens: input,
  cache_creation_input_tokens: cacheCreation,
  cache_read_input_tokens: cacheRead,
  output_tokens: output,
});
const init = () => {
  keep('user', { role: 'user', content: prompt });
  emit({
    type: 'system',
    subtype: 'init',
    cwd: process.cwd(),
    session_id: session,
    tools: ['Bash', 'Read', 'Edit', 'Write'],
    // As the real CLI's init shows them: the stdio servers are still connecting.
    mcp_servers: Object.keys(servers).map((name) => ({ name, status: 'pending' })),
    model,
    permissionMode,
    apiKeySource: 'none',
    claude_code_version: '2.1.197',
    uuid: '00000000-0000-4000-8000-000000000001',
  });
};
const assistant = (id, content, u) =>
  emit({
    type: 'assistant',
    message: { id, type: 'message', role: 'assistant', model: 'claude-fake-1', content, stop_reason: null, usage: u },
    parent_tool_use_id: null,
    session_id: session,
  });
const toolResult = (id, text) =>
  emit({
    type: 'user',
    message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content: text, is_error: false }] },
    parent_tool_use_id: null,
    session_id: session,
  });
const turns = () => {
  init();
  // One API response split over two lines with the same id and usage, as the real CLI does.
  assistant('msg_1', [{ type: 'text', text: `Working on: ${prompt.split('\n')[0]}` }], usage(100, 20, 50, 10));
  assistant('msg_1', [{ type: 'tool_use', id: 'tool_1', name: 'Bash', input: { command: 'git status' } }], usage(100, 20, 50, 10));
  toolResult('tool_1', 'On branch develop\nnothing to commit, working tree clean');
  assistant('msg_2', [{ type: 'text', text: 'All done.' }], usage(200, 40, 100, 0));
};
const modelUsage = {
  'claude-fake-1': {
    inputTokens: 300,
    outputTokens: 60,
    cacheReadInputTokens: 150,
    cacheCreationInputTokens: 10,
    webSearchRequests: 0,
    costUSD: 0.0123,
    contextWindow: 200000,
    maxOutputTokens: 64000,
  },
  'claude-fake-haiku': {
    inputTokens: 5,
    outputTokens: 1,
    cacheReadInputTokens: 0,
    cacheCreationInputTokens: 0,
    webSearchRequests: 0,
    costUSD: 0.0001,
    contextWindow: 200000,
    maxOutputTokens: 8192,
  },
};
const result = (fields) =>
  emit({
    type: 'result',
    duration_ms: 1234,
    duration_api_ms: 1000,
    num_turns: 2,
    stop_reason: 'end_turn',
    session_id: session,
    total_cost_usd: 0.0124,
    usage: { ...usage(300, 60, 150, 10), server_tool_use: { web_search_requests: 0, web_fetch_requests: 0 }, service_tier: 'standard' },
    modelUsage,
    permission_denials: [],
    uuid: '00000000-0000-4000-8000-000000000002',
    ...fields,
  });
const sleepForever = () => setInterval(() => {}, 1 << 30);

/** What the real CLI does with a prompt whose first character is `/` and no such command exists. */
function unknownSlashCommand() {
  const name = prompt.slice(1).split(/\s/)[0];
  init();
  emit({
    type: 'assistant',
    message: {
      id: 'fake-synthetic-0001',
      model: '<synthetic>',
      role: 'assistant',
      stop_reason: 'stop_sequence',
      type: 'message',
      usage: usage(0, 0),
      content: [{ type: 'text', text: `Unknown command: /${name}` }],
    },
    parent_tool_use_id: null,
    session_id: session,
  });
  result({
    subtype: 'success',
    is_error: false,
    duration_api_ms: 0,
    num_turns: 0,
    result: `Unknown command: /${name}`,
    stop_reason: null,
    total_cost_usd: 0,
    usage: usage(0, 0),
    modelUsage: {},
  });
}

/** Writes many assistant messages as fast as the pipe takes them (waits on 'drain', never buffers them all). */
function flood() {
  const textBytes = Number(process.env.FAKE_CLAUDE_FLOOD_TEXT_BYTES ?? 1_000);
  const text = 'x'.repeat(Math.max(1, textBytes - 20));
  const messages = Number(
    process.env.FAKE_CLAUDE_FLOOD_MESSAGES ?? Math.ceil(Number(process.env.FAKE_CLAUDE_FLOOD_BYTES ?? 50_000_000) / (textBytes + 330)),
  );
  init();
  let n = 0;
  const write = () => {
    while (n < messages) {
      n += 1;
      const line = JSON.stringify({
        type: 'assistant',
        message: {
          id: `msg_${n}`,
          type: 'message',
          role: 'assistant',
          model,
          content: [{ type: 'text', text: `${n} ${text}` }],
          stop_reason: null,
          usage: usage(10, 2),
        },
        parent_tool_use_id: null,
        session_id: session,
      });
      if (!process.stdout.write(`${line}\n`)) return void process.stdout.once('drain', write);
    }
    result({
      subtype: 'success',
      is_error: false,
      num_turns: messages,
      result: `Flooded ${messages} messages.`,
      modelUsage: {},
      usage: usage(10 * messages, 2 * messages),
    });
  };
  write();
}

/**
 * One call of an MCP server's tool over stdio, as a client: the handshake the real CLI 2.1.197
 * sends (observed: `initialize` with id 0, protocolVersion "2025-11-25", capabilities {roots,
 * elicitation}, clientInfo claude-code; then `notifications/initialized` and `tools/list`), then
 * `tools/call` if the server listed the tool. One JSON message per line (MCP stdio transport).
 * Resolves to the call's result ({content, isError?}) or {error}.
 */
function callMcpTool(server, tool, input) {
  return new Promise((resolve) => {
    const child = spawn(server.command, server.args ?? [], {
      cwd: process.cwd(),
      env: { ...process.env, ...server.env },
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    const waiting = new Map();
    let buffered = '';
    child.stdout.on('data', (d) => {
      buffered += d.toString();
      for (let at = buffered.indexOf('\n'); at !== -1; at = buffered.indexOf('\n')) {
        const message = JSON.parse(buffered.slice(0, at));
        buffered = buffered.slice(at + 1);
        waiting.get(message.id)?.(message);
      }
    });
    child.on('error', (err) => resolve({ error: String(err) }));
    const request = (id, method, params) =>
      new Promise((answer) => {
        waiting.set(id, answer);
        child.stdin.write(`${JSON.stringify({ method, params, jsonrpc: '2.0', id })}\n`);
      });
    (async () => {
      const init = await request(0, 'initialize', {
        protocolVersion: '2025-11-25',
        capabilities: { roots: {}, elicitation: {} },
        clientInfo: { name: 'claude-code', title: 'Claude Code', version: '2.1.197' },
      });
      if (!init.result) return { error: JSON.stringify(init.error) };
      child.stdin.write(`${JSON.stringify({ method: 'notifications/initialized', jsonrpc: '2.0' })}\n`);
      const listed = await request(1, 'tools/list', {});
      if (!listed.result?.tools?.some((t) => t.name === tool)) return { error: `no tool ${tool}` };
      const called = await request(2, 'tools/call', { name: tool, arguments: input });
      return called.result ?? { error: JSON.stringify(called.error) };
    })().then((outcome) => {
      child.stdin.end();
      resolve(outcome);
    });
  });
}

/**
 * Whether the session may use `tool` (for Bash: with `command`) without asking; print mode cannot
 * ask, so anything else is refused. Rules as --allowedTools takes them: `mcp__server__tool` or the
 * whole server `mcp__server`; `Bash`, `Bash(<command>)` or a prefix `Bash(<prefix>:*)`.
 */
function allowed(tool, command) {
  if (permissionMode === 'bypassPermissions') return true;
  return (options['allowed-tools'] ?? []).some((rule) => {
    if (rule === tool || (tool.startsWith('mcp__') && rule === tool.split('__').slice(0, 2).join('__'))) return true;
    const bash = tool === 'Bash' && /^Bash\((.*)\)$/.exec(rule);
    if (!bash) return false;
    return bash[1].endsWith(':*') ? command.startsWith(bash[1].slice(0, -2)) : command === bash[1];
  });
}
/** A refused call as print mode answers it (anthropics/claude-agent-sdk-typescript#100), listed in the result. */
function refuse(id, tool, input) {
  toolResult(id, `Claude requested permissions to use ${tool}, but you haven't granted it yet.`);
  denials.push({ tool_name: tool, tool_use_id: id, tool_input: input });
}

/** The question through `mcp__baton__ask` (baton's MCP server from --mcp-config): the tool result's text, or why not. */
async function askThroughMcp(text) {
  const tool = 'mcp__baton__ask';
  assistant('msg_ask_1', [{ type: 'tool_use', id: 'tool_ask', name: tool, input: { question: text } }], usage(100, 20, 50, 10));
  if (!servers.baton) {
    // A tool the CLI was not given does not exist for the model; the fake says so in the result.
    toolResult('tool_ask', `Error: No such tool available: ${tool}`);
    return false;
  }
  if (!allowed(tool)) {
    refuse('tool_ask', tool, { question: text });
    return false;
  }
  const outcome = await callMcpTool(servers.baton, 'ask', { question: text });
  // An MCP tool's result content is its content blocks (not observed here: no credentials to run a model).
  emit({
    type: 'user',
    message: {
      role: 'user',
      content: [
        {
          type: 'tool_result',
          tool_use_id: 'tool_ask',
          content: outcome.content ?? [{ type: 'text', text: outcome.error }],
          is_error: !!(outcome.isError || outcome.error),
        },
      ],
    },
    parent_tool_use_id: null,
    session_id: session,
  });
  return !outcome.isError && !outcome.error;
}

/**
 * A conversation: ask for the first turns (mode `ask`: `baton ask` on PATH, as through the Bash
 * tool; mode `ask-mcp`: the `ask` tool of baton's MCP server), then answer from the reply.
 */
async function conversation() {
  const question = process.env.FAKE_CLAUDE_QUESTION ?? settings.question ?? 'Which database should the service use?';
  const askTurns = Number(process.env.FAKE_CLAUDE_ASK_TURNS ?? settings.askTurns ?? 1);
  // Turns so far: the user prompts in the session (tool results are user entries too, of another shape).
  const turn = earlier.filter((e) => e.type === 'user' && typeof e.message?.content === 'string').length + 1;
  init();
  if (turn <= askTurns) {
    const text = askTurns > 1 ? `${question} (turn ${turn})` : question;
    assistant('msg_ask_1', [{ type: 'text', text: 'I need an answer before I go on.' }], usage(100, 20, 50, 10));
    let asked;
    if (mode === 'ask-mcp') asked = await askThroughMcp(text);
    else {
      const command = `baton ask ${JSON.stringify(text)}`;
      assistant('msg_ask_1', [{ type: 'tool_use', id: 'tool_ask', name: 'Bash', input: { command } }], usage(100, 20, 50, 10));
      if (allowed('Bash', command)) {
        const run = spawnSync('baton', ['ask', text], { encoding: 'utf8' });
        toolResult('tool_ask', `${run.stdout ?? ''}${run.stderr ?? ''}${run.error ? String(run.error) : ''}`.trim());
        asked = run.status === 0;
      } else {
        refuse('tool_ask', 'Bash', { command });
        asked = false;
      }
    }
    assistant('msg_ask_2', [{ type: 'text', text: 'Waiting for the answer.' }], usage(200, 40, 100, 0));
    result({ subtype: 'success', is_error: false, result: `I asked: ${text}`, permission_denials: denials });
    process.exitCode = asked ? 0 : 1;
    return;
  }
  const earlierQuestions = earlier.filter(
    (e) => e.type === 'assistant' && /baton ask|mcp__baton__ask/.test(JSON.stringify(e.message)),
  ).length;
  // `answerDelayMs`: the answering turn takes that long (a suite stops the server meanwhile).
  const delay = Number(settings.answerDelayMs ?? 0);
  if (delay > 0) spawnSync(process.execPath, ['-e', `setTimeout(() => {}, ${delay})`]);
  const reply =
    prompt
      .split('\n')
      .filter((l) => l.trim() !== '')
      .at(-1) ?? '';
  assistant('msg_answer', [{ type: 'text', text: `Going on with: ${reply}` }], usage(200, 40, 100, 0));
  result({
    subtype: 'success',
    is_error: false,
    result: `Answered after ${earlierQuestions} question(s) in session ${session} (${earlier.length} entries restored): ${reply}`,
  });
}

switch (prompt.startsWith('/') ? 'unknown-slash-command' : mode) {
  case 'ask':
  case 'ask-mcp':
    await conversation();
    break;
  case 'unknown-slash-command':
    unknownSlashCommand();
    break;
  case 'success':
    turns();
    result({ subtype: 'success', is_error: false, result: `Finished the task for: ${prompt.split('\n')[0]}` });
    break;
  case 'noisy-success':
    init();
    process.stdout.write('this is not json\n');
    process.stdout.write('{"truncated": \n');
    emit({ type: 'rate_limit_event', rate_limit_info: { status: 'allowed' }, session_id: session });
    emit({
      type: 'system',
      subtype: 'api_retry',
      attempt: 1,
      max_retries: 10,
      retry_delay_ms: 500,
      error_status: 529,
      error: 'overloaded_error',
    });
    emit({ type: 'some_future_type', payload: { x: 1 } });
    emit([1, 2, 3]);
    assistant('msg_1', [{ type: 'text', text: 'Done despite the noise.' }], usage(10, 5));
    result({ subtype: 'success', is_error: false, result: 'Noisy but fine.' });
    break;
  case 'legacy-success':
    init();
    assistant('msg_1', [{ type: 'text', text: 'Old CLI.' }], usage(10, 5));
    emit({
      type: 'result',
      subtype: 'success',
      is_error: false,
      total_cost: 0.5,
      duration_ms: 10,
      result: 'Legacy done.',
      usage: usage(11, 7, 3, 2),
      session_id: session,
    });
    break;
  case 'no-is-error':
    turns();
    emit({ type: 'result', subtype: 'success', total_cost_usd: 0.01, duration_ms: 10, num_turns: 2, result: 'Done?', session_id: session });
    break;
  case 'flood':
    flood();
    break;
  case 'unknown-skill':
    init();
    result({
      subtype: 'success',
      is_error: false,
      duration_api_ms: 0,
      num_turns: 2,
      result: 'Unknown skill: missing-workflowprogram-entry',
      stop_reason: null,
      total_cost_usd: 0,
      usage: usage(0, 0),
      modelUsage: {},
    });
    break;
  case 'error_during_execution':
  case 'error_max_turns':
  case 'error_max_budget_usd':
  case 'error_max_structured_output_retries':
    turns();
    emit({
      type: 'result',
      subtype: mode,
      duration_ms: 1000,
      duration_api_ms: 500,
      is_error: true,
      num_turns: 10,
      stop_reason: null,
      session_id: session,
      total_cost_usd: 0.2,
      usage: usage(300, 60, 150, 10),
      modelUsage,
      permission_denials: [],
      errors: [`fake failure: ${mode}`],
      uuid: '00000000-0000-4000-8000-000000000003',
    });
    process.exitCode = 1;
    break;
  case 'api-error':
    init();
    result({
      subtype: 'success',
      is_error: true,
      api_error_status: 529,
      result: 'API Error: Repeated 529 Overloaded errors',
      total_cost_usd: 0,
      modelUsage: {},
      stop_reason: null,
    });
    process.exitCode = 1;
    break;
  case 'rate-limited':
  case 'legacy-overloaded':
  case 'connection-error':
    init();
    result({
      subtype: 'success',
      is_error: true,
      ...(mode === 'rate-limited' ? { api_error_status: 429 } : {}),
      result: {
        'rate-limited':
          'API Error: 429 {"type":"error","error":{"type":"rate_limit_error","message":"Number of requests has exceeded your rate limit"}}',
        'legacy-overloaded':
          'API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_fake"}',
        'connection-error': 'API Error: Connection error.',
      }[mode],
      total_cost_usd: 0,
      modelUsage: {},
      stop_reason: null,
    });
    process.exitCode = 1;
    break;
  case 'not-logged-in':
    init();
    emit({
      type: 'assistant',
      message: {
        id: 'msg_login',
        type: 'message',
        role: 'assistant',
        model: '<synthetic>',
        content: [{ type: 'text', text: 'Not logged in · Please run /login' }],
        usage: usage(0, 0),
      },
      error: 'authentication_failed',
      parent_tool_use_id: null,
      session_id: session,
    });
    result({
      subtype: 'success',
      is_error: true,
      result: 'Not logged in · Please run /login',
      total_cost_usd: 0,
      modelUsage: {},
      usage: usage(0, 0),
      num_turns: 1,
    });
    process.exitCode = 1;
    break;
  case 'garbage':
    process.stdout.write('Segmentation fault? no, just garbage\n<html>not json</html>\n{"type": 42}\n');
    break;
  case 'crash':
    init();
    assistant('msg_1', [{ type: 'text', text: 'Starting…' }], usage(10, 5));
    process.stderr.write('FATAL: fake crash in the middle of the stream\n');
    process.exit(1);
    break;
  case 'hang':
    init();
    sleepForever();
    break;
  case 'hang-ignore-term':
    process.on('SIGTERM', () => {
      process.stdout.write('ignoring SIGTERM\n');
    });
    init();
    sleepForever();
    break;
  case 'token-overrun': {
    init();
    let n = 0;
    setInterval(() => {
      n += 1;
      assistant(`msg_big_${n}`, [{ type: 'text', text: `chunk ${n}` }], usage(60_000, 2_000, 0, 0));
    }, 20);
    break;
  }
  case 'no-output':
    process.exitCode = Number(process.env.FAKE_CLAUDE_EXIT ?? '0');
    break;
  default:
    process.stderr.write(`fake-claude: unknown FAKE_CLAUDE_MODE ${mode}\n`);
    process.exit(2);
}
