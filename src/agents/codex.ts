import path from 'node:path';
import {
  checkSessionId,
  failureKindFromText,
  firstLine,
  isRecord,
  num,
  parseEvent,
  snippet,
  splitCommand,
  str,
  viaStdin,
  withRefusals,
} from './common.js';
import type { RefusedClaim } from '../budgets/index.js';
import { addUsage, emptyUsage, FAILURE_KIND, type AgentUsage } from './outcome.js';
import type { AgentAdapter, AgentExit, AgentSession, AgentStream, StreamOutcome } from './types.js';

/**
 * OpenAI Codex CLI (`@openai/codex`, bin `codex`, verified with 0.171.0; see
 * test/fakes/agent/SOURCES.md): `codex exec --json … -` reads the prompt from stdin (`-`), so
 * nothing of it meets clap's option or subcommand parser, and prints JSONL events:
 * `thread.started` {thread_id}, `turn.started`, `item.started|updated|completed` {item}, `turn.completed`
 * {usage: {input_tokens, cached_input_tokens, output_tokens, reasoning_output_tokens}},
 * `turn.failed` {error: {message}}, and `error` {message} (also the non-fatal "Reconnecting... 2/5").
 * The final answer is the last `agent_message` item. No cost: baton prices the tokens.
 */

/** clap's exit code for a usage error (an unknown option, a bad value). */
const CLAP_USAGE_EXIT = 2;

function baseArgs(prefix: string[], session: AgentSession): string[] {
  const args = [...prefix, 'exec', '--json', '--skip-git-repo-check', '--color=never'];
  // Codex's own sandbox (Landlock/seccomp) cannot nest inside baton's; the workspace is the sandbox.
  args.push(session.skipPermissions ? '--dangerously-bypass-approvals-and-sandbox' : '--sandbox=workspace-write');
  if (session.model !== null) args.push(`--model=${session.model}`);
  return args;
}

export const codexAdapter: AgentAdapter = {
  name: 'codex',
  title: 'Codex CLI',
  executable: 'codex',
  npmPackage: '@openai/codex',
  reportsCost: false,
  credential: { secret: 'CODEX_API_KEY', serverEnv: 'BATON_CODEX_API_KEY', doc: 'OpenAI API key for Codex CLI' },
  egressHosts: ['api.openai.com', 'chatgpt.com', 'auth.openai.com'],
  invocation(command, prompt, session) {
    const { executable, prefix } = splitCommand(command, 'Codex CLI');
    return viaStdin(executable, [...baseArgs(prefix, session), '-'], prompt);
  },
  resumeInvocation(command, sessionId, reply, session) {
    const { executable, prefix } = splitCommand(command, 'Codex CLI');
    return viaStdin(executable, [...baseArgs(prefix, session), 'resume', checkSessionId(sessionId), '-'], reply);
  },
  // `codex exec` reads CODEX_API_KEY; OPENAI_API_KEY for older CLIs and custom providers.
  credentialEnv: (secret): Record<string, string> => (secret ? { CODEX_API_KEY: secret, OPENAI_API_KEY: secret } : {}),
  // $CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl, whatever the cwd.
  transcriptPaths: (home) => [path.join(home, '.codex', 'sessions')],
  createStream: createCodexStream,
};

function createCodexStream(): AgentStream {
  let usage = emptyUsage();
  let sessionId: string | null = null;
  let lastMessage: string | null = null;
  let turnCompleted = false;
  let failure: string | null = null;
  let lastError: string | null = null;
  const refused: RefusedClaim[] = [];
  const tokens = () => usage.inputTokens + usage.outputTokens + usage.cacheReadInputTokens + usage.cacheCreationInputTokens;
  return {
    get streamedUsage() {
      return { ...usage };
    },
    get streamedTokens() {
      return tokens();
    },
    get sessionId() {
      return sessionId;
    },
    model: null,
    push(line) {
      const event = parseEvent(line);
      if (!event) return line.trim() === '' ? [] : [line];
      return withRefusals(describe(event), refused);
    },
    outcome(exit) {
      return judge(exit);
    },
  };

  function describe(event: Record<string, unknown>): string[] {
    switch (event.type) {
      case 'thread.started':
        sessionId = str(event.thread_id) ?? sessionId;
        return [`[init] codex thread ${sessionId ?? '?'}`];
      case 'turn.started':
        return ['[turn] started'];
      case 'turn.completed': {
        turnCompleted = true;
        usage = addUsage(usage, codexUsage(event.usage, refused));
        return [`[turn] completed: ${tokens().toLocaleString('en-US')} tokens so far`];
      }
      case 'turn.failed': {
        const error = isRecord(event.error) ? str(event.error.message) : undefined;
        failure = error ?? 'the turn failed without a message';
        return [`[turn failed] ${snippet(failure)}`];
      }
      case 'error':
        lastError = str(event.message) ?? JSON.stringify(event);
        return [`[error] ${snippet(lastError)}`];
      case 'item.started':
      case 'item.updated':
      case 'item.completed': {
        const item = isRecord(event.item) ? event.item : {};
        if (event.type === 'item.completed' && item.type === 'agent_message' && typeof item.text === 'string') lastMessage = item.text;
        return event.type === 'item.completed' || item.type === 'command_execution' ? describeItem(event.type, item) : [];
      }
      default:
        return [`[${event.type}] ${snippet(JSON.stringify(event))}`];
    }
  }

  function judge(exit: AgentExit): StreamOutcome | null {
    const used = tokens() > 0 ? { ...usage } : null;
    if (failure !== null) {
      return {
        status: 'failed',
        kind: failureKindFromText(failure),
        summary: `Codex CLI: the turn failed: ${failure}`,
        usage: used,
        costUsd: null,
      };
    }
    if (exit.code === CLAP_USAGE_EXIT && sessionId === null) {
      // clap refused the argv before any event (`error: unexpected argument …`, exit 2).
      const why = exit.stderr.find((l) => l.startsWith('error:'))?.trim() ?? exit.stderr.at(-1)?.trim() ?? '';
      return {
        status: 'failed',
        kind: FAILURE_KIND.agentBadInput,
        summary: `Codex CLI refused its arguments (exit code 2)${why ? `: ${why}` : ''}`,
        usage: null,
        costUsd: null,
      };
    }
    if (exit.code !== 0 || exit.signal) {
      const how = exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
      if (lastError === null && !turnCompleted) return null;
      return {
        status: 'failed',
        kind: lastError ? failureKindFromText(lastError) : FAILURE_KIND.agentError,
        summary: `Codex CLI ${how}${lastError ? `: ${lastError}` : ''}`,
        usage: used,
        costUsd: null,
      };
    }
    if (!turnCompleted) return null;
    return { status: 'succeeded', summary: lastMessage?.trim() || '(the agent gave no final text)', usage: used, costUsd: null };
  }
}

/** OpenAI counts cached input inside input_tokens, and reasoning inside output_tokens. */
function codexUsage(raw: unknown, refused: RefusedClaim[]): AgentUsage {
  if (!isRecord(raw)) return emptyUsage();
  const field = (key: string) => num(raw[key], `turn.completed usage.${key}`, refused);
  const cached = field('cached_input_tokens');
  return {
    inputTokens: Math.max(0, field('input_tokens') - cached),
    outputTokens: field('output_tokens'),
    cacheReadInputTokens: cached,
    cacheCreationInputTokens: 0,
  };
}

function describeItem(type: string, item: Record<string, unknown>): string[] {
  switch (item.type) {
    case 'agent_message':
      return (str(item.text) ?? '').split('\n').map((l) => `[assistant] ${l}`);
    case 'reasoning':
      return [`[thinking] ${snippet((str(item.text) ?? '').replace(/\s+/g, ' '))}`];
    case 'command_execution': {
      if (type === 'item.started') return [`[tool] shell ${snippet(str(item.command) ?? '')}`];
      if (type !== 'item.completed') return [];
      const code = typeof item.exit_code === 'number' ? ` (exit ${item.exit_code})` : '';
      return [`[tool result]${code} ${snippet((str(item.aggregated_output) ?? '').replace(/\s+/g, ' '))}`];
    }
    case 'file_change': {
      const changes = Array.isArray(item.changes) ? item.changes.filter(isRecord) : [];
      return [`[files] ${changes.map((c) => `${str(c.kind) ?? '?'} ${str(c.path) ?? '?'}`).join(', ') || '(none)'}`];
    }
    case 'mcp_tool_call':
      return [`[tool] ${str(item.server) ?? '?'}.${str(item.tool) ?? '?'} ${str(item.status) ?? ''}`.trim()];
    case 'web_search':
      return [`[tool] web search ${snippet(str(item.query) ?? '')}`];
    case 'todo_list':
      return ['[plan] updated'];
    case 'error':
      return [`[warning] ${snippet(str(item.message) ?? '')}`];
    default:
      return [`[${String(item.type)}] ${snippet(firstLine(JSON.stringify(item)))}`];
  }
}
