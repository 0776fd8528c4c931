import path from 'node:path';
import type { RefusedClaim } from '../budgets/index.js';
import {
  checkSessionId,
  failureKindFromText,
  isRecord,
  num,
  parseEvent,
  snippet,
  splitCommand,
  str,
  viaStdin,
  withRefusals,
} from './common.js';
import { addUsage, emptyUsage, FAILURE_KIND, type AgentUsage } from './outcome.js';
import type { AgentAdapter, AgentSession, AgentStream } from './types.js';

/**
 * OpenCode (`opencode-ai`, bin `opencode`, verified with 1.18.33; see
 * test/fakes/agent/SOURCES.md): `opencode run --format json` joins its message words with stdin,
 * so the prompt goes to stdin and yargs never sees it. Every line is `{type, timestamp, sessionID,
 * …}`: `step_start`, `text` {part: {text}}, `tool_use` {part: {tool, state}}, `step_finish` {part:
 * {reason, cost, tokens: {input, output, reasoning, cache: {read, write}}}}, `error` {error: {name,
 * data: {message}}} (then exit 1). Cost is in USD per step. Without `--auto` every permission the
 * agent asks for is rejected.
 */

/** The variable OpenCode reads a provider's key from, by the provider part of `provider/model`. */
const PROVIDER_KEY_ENV: Record<string, string> = {
  anthropic: 'ANTHROPIC_API_KEY',
  openai: 'OPENAI_API_KEY',
  google: 'GOOGLE_GENERATIVE_AI_API_KEY',
  openrouter: 'OPENROUTER_API_KEY',
  groq: 'GROQ_API_KEY',
  mistral: 'MISTRAL_API_KEY',
  deepseek: 'DEEPSEEK_API_KEY',
  xai: 'XAI_API_KEY',
  opencode: 'OPENCODE_API_KEY',
};

function baseArgs(prefix: string[], session: AgentSession): string[] {
  const args = [...prefix, 'run', '--format=json'];
  if (session.skipPermissions) args.push('--auto');
  if (session.model !== null) args.push(`--model=${session.model}`);
  return args;
}

export const opencodeAdapter: AgentAdapter = {
  name: 'opencode',
  title: 'OpenCode',
  executable: 'opencode',
  npmPackage: 'opencode-ai',
  reportsCost: true,
  credential: {
    secret: 'OPENCODE_API_KEY',
    serverEnv: 'BATON_OPENCODE_API_KEY',
    doc: "API key of the model's provider (ANTHROPIC_API_KEY, OPENAI_API_KEY, … inside the run, by the provider of the model)",
  },
  egressHosts: ['models.dev', 'opencode.ai', 'api.anthropic.com', 'api.openai.com', 'generativelanguage.googleapis.com', 'openrouter.ai'],
  invocation(command, prompt, session) {
    const { executable, prefix } = splitCommand(command, 'OpenCode');
    return viaStdin(executable, baseArgs(prefix, session), prompt);
  },
  resumeInvocation(command, sessionId, reply, session) {
    const { executable, prefix } = splitCommand(command, 'OpenCode');
    return viaStdin(executable, [...baseArgs(prefix, session), `--session=${checkSessionId(sessionId)}`], reply);
  },
  credentialEnv(secret, session) {
    if (!secret) return {};
    const provider = session.model?.split('/')[0] ?? 'opencode';
    return { [PROVIDER_KEY_ENV[provider] ?? 'OPENCODE_API_KEY']: secret };
  },
  // $XDG_DATA_HOME/opencode: opencode.db (sessions, messages, parts) and storage/.
  transcriptPaths: (home) => [path.join(home, '.local', 'share', 'opencode')],
  createStream: createOpencodeStream,
};

function createOpencodeStream(): AgentStream {
  let usage = emptyUsage();
  let cost = 0;
  let costSeen = false;
  let sessionId: string | null = null;
  let lastText = '';
  let steps = 0;
  let error: string | null = null;
  let errorName: string | null = null;
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
      return withRefusals(read(line), refused);
    },
    outcome(exit) {
      const used = tokens() > 0 ? { ...usage } : null;
      const costUsd = costSeen ? cost : null;
      if (error !== null) {
        const kind = errorName === 'ProviderAuthError' ? FAILURE_KIND.agentAuth : failureKindFromText(`${errorName ?? ''} ${error}`);
        return { status: 'failed', kind, summary: `OpenCode reported ${errorName ?? 'an error'}: ${error}`, usage: used, costUsd };
      }
      if (steps === 0) return null;
      if (exit.code !== 0 || exit.signal) {
        const how = exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
        return { status: 'failed', kind: FAILURE_KIND.agentError, summary: `OpenCode ${how}`, usage: used, costUsd };
      }
      return { status: 'succeeded', summary: lastText.trim() || '(the agent gave no final text)', usage: used, costUsd };
    },
  };

  function read(line: string): string[] {
    const event = parseEvent(line);
    if (!event) return line.trim() === '' ? [] : [line];
    sessionId = str(event.sessionID) ?? sessionId;
    const part = isRecord(event.part) ? event.part : {};
    switch (event.type) {
      case 'step_start':
        return [];
      case 'text': {
        lastText = str(part.text) ?? '';
        return lastText.split('\n').map((l) => `[assistant] ${l}`);
      }
      case 'reasoning':
        return [`[thinking] ${snippet((str(part.text) ?? '').replace(/\s+/g, ' '))}`];
      case 'tool_use': {
        const state = isRecord(part.state) ? part.state : {};
        const failed = state.status === 'error';
        const detail = failed ? (str(state.error) ?? '') : (str(state.title) ?? JSON.stringify(state.input ?? {}));
        return [`[${failed ? 'tool error' : 'tool'}] ${str(part.tool) ?? '?'} ${snippet(detail.replace(/\s+/g, ' '))}`];
      }
      case 'step_finish': {
        steps += 1;
        usage = addUsage(usage, opencodeUsage(part.tokens, refused));
        if (typeof part.cost === 'number') {
          cost += num(part.cost, 'step_finish part.cost', refused, 'costUsd');
          costSeen = true;
        }
        return [`[step] ${str(part.reason) ?? 'finished'}: ${tokens().toLocaleString('en-US')} tokens, $${cost.toFixed(4)} so far`];
      }
      case 'error': {
        const e = isRecord(event.error) ? event.error : {};
        const data = isRecord(e.data) ? e.data : {};
        errorName = str(e.name) ?? null;
        error = str(data.message) ?? errorName ?? 'unknown error';
        return [`[error] ${errorName ?? 'error'}: ${snippet(error)}`];
      }
      default:
        return [`[${event.type}] ${snippet(JSON.stringify(event))}`];
    }
  }
}

/** `input` excludes the cached part; reasoning is billed as output. */
function opencodeUsage(raw: unknown, refused: RefusedClaim[]): AgentUsage {
  if (!isRecord(raw)) return emptyUsage();
  const cache = isRecord(raw.cache) ? raw.cache : {};
  const field = (where: Record<string, unknown>, key: string, name = key) => num(where[key], `step_finish part.tokens.${name}`, refused);
  return {
    inputTokens: field(raw, 'input'),
    outputTokens: field(raw, 'output') + field(raw, 'reasoning'),
    cacheReadInputTokens: field(cache, 'read', 'cache.read'),
    cacheCreationInputTokens: field(cache, 'write', 'cache.write'),
  };
}
