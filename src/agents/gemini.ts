import path from 'node:path';
import {
  checkSessionId,
  failureKindFromText,
  isRecord,
  neutraliseSlash,
  num,
  parseEvent,
  snippet,
  splitCommand,
  str,
  viaStdin,
  withRefusals,
} from './common.js';
import type { RefusedClaim } from '../budgets/index.js';
import { emptyUsage, FAILURE_KIND, type AgentUsage } from './outcome.js';
import type { AgentAdapter, AgentSession, AgentStream } from './types.js';

/**
 * Gemini CLI (`@google/gemini-cli`, bin `gemini`, verified with 0.61.0; see
 * test/fakes/agent/SOURCES.md). Headless whenever stdin is not a terminal; the prompt goes to
 * stdin (yargs never sees it; `-p` would only be appended to it), and a leading `/` would run a
 * slash command, so it gets a newline first. `--output-format stream-json` prints JSONL: `init`
 * {session_id, model}, `message` {role, content, delta}, `tool_use`, `tool_result`, `error`
 * {severity, message}, `result` {status, error?, stats}. Exit codes (FatalError subclasses): 0, 1,
 * 41 authentication, 42 bad input, 44 sandbox, 52 configuration, 53 turn limit, 54 tool
 * execution, 55 untrusted workspace, 130 cancelled. No cost: baton prices the tokens.
 */

export const GEMINI_EXIT = { auth: 41, input: 42, sandbox: 44, config: 52, turnLimit: 53, tool: 54, untrusted: 55 } as const;

function baseArgs(prefix: string[], session: AgentSession): string[] {
  // --skip-trust: the workspace is a fresh checkout baton made for this run (else exit 55 headless).
  const args = [...prefix, '--output-format=stream-json', '--skip-trust'];
  if (session.skipPermissions) args.push('--approval-mode=yolo');
  if (session.model !== null) args.push(`--model=${session.model}`);
  return args;
}

export const geminiAdapter: AgentAdapter = {
  name: 'gemini',
  title: 'Gemini CLI',
  executable: 'gemini',
  npmPackage: '@google/gemini-cli',
  reportsCost: false,
  credential: { secret: 'GEMINI_API_KEY', serverEnv: 'BATON_GEMINI_API_KEY', doc: 'Gemini API key (Google AI Studio)' },
  egressHosts: ['generativelanguage.googleapis.com', 'cloudcode-pa.googleapis.com', 'oauth2.googleapis.com', 'play.googleapis.com'],
  invocation(command, prompt, session) {
    const { executable, prefix } = splitCommand(command, 'Gemini CLI');
    return viaStdin(executable, baseArgs(prefix, session), neutraliseSlash(prompt));
  },
  resumeInvocation(command, sessionId, reply, session) {
    const { executable, prefix } = splitCommand(command, 'Gemini CLI');
    return viaStdin(executable, [...baseArgs(prefix, session), `--resume=${checkSessionId(sessionId)}`], neutraliseSlash(reply));
  },
  credentialEnv: (secret): Record<string, string> => (secret ? { GEMINI_API_KEY: secret } : {}),
  // ~/.gemini/tmp/<project id>/chats/session-*.json, the project id from ~/.gemini/projects.json.
  transcriptPaths: (home) => [path.join(home, '.gemini', 'tmp'), path.join(home, '.gemini', 'projects.json')],
  createStream: createGeminiStream,
};

function createGeminiStream(): AgentStream {
  let usage = emptyUsage();
  let sessionId: string | null = null;
  let model: string | null = null;
  let answer = '';
  let result: { status: string; error?: { type?: string; message?: string } } | null = null;
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
    get model() {
      return model;
    },
    push(line) {
      return withRefusals(read(line), refused);
    },
    outcome(exit) {
      const used = tokens() > 0 ? { ...usage } : null;
      if (result?.status === 'success' && exit.code === 0) {
        return { status: 'succeeded', summary: answer.trim() || '(the agent gave no final text)', usage: used, costUsd: null };
      }
      if (result === null && exit.code === 0) return null;
      if (result === null && lastError === null && !isGeminiExit(exit.code)) return null;
      const stderr = exit.stderr
        .filter((l) => l.trim() !== '' && !/^\s+at /.test(l))
        .at(-1)
        ?.trim();
      const message = result?.error?.message ?? lastError ?? stderr ?? '';
      const { kind, why } = geminiFailure(exit.code, result?.error?.type, message);
      return {
        status: 'failed',
        kind,
        summary: `Gemini CLI ${why}${exit.code !== null ? ` (exit code ${exit.code})` : exit.signal ? ` (killed by ${exit.signal})` : ''}${message ? `: ${message}` : ''}`,
        usage: used,
        costUsd: null,
      };
    },
  };

  function read(line: string): string[] {
    const event = parseEvent(line);
    if (!event) return line.trim() === '' ? [] : [line];
    switch (event.type) {
      case 'init':
        sessionId = str(event.session_id) ?? sessionId;
        model = str(event.model) ?? model;
        return [`[init] model ${model ?? '?'}, session ${sessionId ?? '?'}`];
      case 'message': {
        if (event.role !== 'assistant') return [];
        const content = str(event.content) ?? '';
        // Deltas of one reply arrive in pieces; a tool call in between starts a new reply.
        answer = event.delta === true ? answer + content : content;
        return content.split('\n').map((l) => `[assistant] ${l}`);
      }
      case 'tool_use':
        answer = '';
        return [`[tool] ${str(event.tool_name) ?? '?'} ${snippet(JSON.stringify(event.parameters ?? {}))}`];
      case 'tool_result': {
        const failed = event.status === 'error';
        const error = isRecord(event.error) ? str(event.error.message) : undefined;
        return [
          `[${failed ? 'tool error' : 'tool result'}] ${snippet((failed ? (error ?? '') : (str(event.output) ?? '')).replace(/\s+/g, ' '))}`,
        ];
      }
      case 'error': {
        const message = str(event.message) ?? '';
        if (event.severity !== 'warning') lastError = message;
        return [`[${event.severity === 'warning' ? 'warning' : 'error'}] ${snippet(message)}`];
      }
      case 'result': {
        const error = isRecord(event.error) ? { type: str(event.error.type), message: str(event.error.message) } : undefined;
        result = { status: str(event.status) ?? '(none)', ...(error ? { error } : {}) };
        usage = geminiUsage(event.stats, refused);
        return [
          `[result] ${result.status}, ${tokens().toLocaleString('en-US')} tokens${error?.message ? `: ${snippet(error.message)}` : ''}`,
        ];
      }
      default:
        return [`[${event.type}] ${snippet(JSON.stringify(event))}`];
    }
  }
}

function isGeminiExit(code: number | null): boolean {
  return code !== null && (Object.values(GEMINI_EXIT) as number[]).includes(code);
}

function geminiFailure(code: number | null, type: string | undefined, message: string): { kind: string; why: string } {
  if (code === GEMINI_EXIT.auth || type === 'FatalAuthenticationError')
    return { kind: FAILURE_KIND.agentAuth, why: 'could not authenticate' };
  if (code === GEMINI_EXIT.turnLimit || type === 'FatalTurnLimitedError')
    return { kind: FAILURE_KIND.agentTurnLimit, why: 'reached its turn limit' };
  if (code === GEMINI_EXIT.input) return { kind: FAILURE_KIND.agentBadInput, why: 'refused its input' };
  if (code === GEMINI_EXIT.config) return { kind: FAILURE_KIND.agentError, why: 'has a configuration error' };
  if (code === GEMINI_EXIT.sandbox) return { kind: FAILURE_KIND.agentError, why: 'could not start its sandbox' };
  if (code === GEMINI_EXIT.untrusted) return { kind: FAILURE_KIND.agentError, why: 'does not trust the workspace' };
  if (code === GEMINI_EXIT.tool) return { kind: FAILURE_KIND.agentError, why: 'failed running a tool' };
  return { kind: failureKindFromText(message), why: 'reported an error' };
}

/** `stats.input_tokens` is the prompt with its cached part, `cached` that part, `input` the rest. */
function geminiUsage(raw: unknown, refused: RefusedClaim[]): AgentUsage {
  if (!isRecord(raw)) return emptyUsage();
  const field = (key: string) => num(raw[key], `result stats.${key}`, refused);
  const cached = field('cached');
  return {
    inputTokens: Math.max(0, field('input_tokens') - cached),
    outputTokens: field('output_tokens'),
    cacheReadInputTokens: cached,
    cacheCreationInputTokens: 0,
  };
}
