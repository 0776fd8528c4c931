#!/usr/bin/env node
// A stand-in for `claude -p --output-format stream-json --verbose …` that prints NDJSON shaped as
// in ../shared/reference/claude-code/STREAM-JSON.md. The behaviour is picked by FAKE_CLAUDE_MODE:
//
//   success (default)   init, assistant/tool turns, final result subtype success
//   noisy-success       like success, with garbage lines, unknown message types and api_retry
//   legacy-success      old CLI shape: result with `total_cost`, no modelUsage, no is_error
//   error_during_execution | error_max_turns | error_max_budget_usd | error_max_structured_output_retries
//                       a result with that subtype, `errors`, and no `result` field (exit 1)
//   api-error           subtype success with is_error true and api_error_status 529 (exit 1)
//   not-logged-in       what the real CLI prints without credentials (exit 1)
//   garbage             only non-JSON lines (exit 0)
//   crash               init and one assistant message, then exits 1 mid-stream
//   hang                init, then sleeps until signalled
//   hang-ignore-term    like hang but ignores SIGTERM (only SIGKILL ends it)
//   token-overrun       assistant messages with large usage, every 20 ms, until killed
//   no-output           prints nothing; exits with FAKE_CLAUDE_EXIT (default 0)
//
// FAKE_CLAUDE_RECORD=<file> writes {argv, cwd, env facts} there, for assertions.
import fs from 'node:fs';

const mode = process.env.FAKE_CLAUDE_MODE ?? 'success';
const args = process.argv.slice(2);
const prompt = args.at(-1) ?? '';
const session = 'fake-session-0001';

if (process.env.FAKE_CLAUDE_RECORD) {
  fs.writeFileSync(
    process.env.FAKE_CLAUDE_RECORD,
    JSON.stringify({
      argv: args,
      prompt,
      cwd: process.cwd(),
      hasAnthropicApiKey: 'ANTHROPIC_API_KEY' in process.env,
      hasCallbackToken: 'CALLBACK_TOKEN' in process.env,
      oauthToken: process.env.CLAUDE_CODE_OAUTH_TOKEN ?? null,
      giteaToken: process.env.GITEA_TOKEN ?? null,
      issueNumber: process.env.ISSUE_NUMBER ?? null,
    }),
  );
}

if (args.includes('-p') && args.includes('stream-json') && !args.includes('--verbose')) {
  process.stderr.write('Error: When using --print, --output-format=stream-json requires --verbose\n');
  process.exit(1);
}

const emit = (message) => process.stdout.write(`${JSON.stringify(message)}\n`);
const usage = (input, output, cacheRead = 0, cacheCreation = 0) => ({
  input_tokens: input,
  cache_creation_input_tokens: cacheCreation,
  cache_read_input_tokens: cacheRead,
  output_tokens: output,
});
const init = () =>
  emit({
    type: 'system',
    subtype: 'init',
    cwd: process.cwd(),
    session_id: session,
    tools: ['Bash', 'Read', 'Edit', 'Write'],
    mcp_servers: [],
    model: 'claude-fake-1',
    permissionMode: 'bypassPermissions',
    apiKeySource: 'none',
    claude_code_version: '2.1.197',
    uuid: '00000000-0000-4000-8000-000000000001',
  });
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

switch (mode) {
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
      total_cost: 0.5,
      duration_ms: 10,
      result: 'Legacy done.',
      usage: usage(11, 7, 3, 2),
      session_id: session,
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
