import { checkClaim, type RefusedClaim } from '../budgets/index.js';
import { addUsage, emptyUsage, FAILURE_KIND, type AgentStatus, type AgentUsage } from './outcome.js';

/**
 * Reads Claude Code's `--output-format stream-json --verbose` NDJSON, one stdout line at a time
 * (see ../shared/reference/claude-code/STREAM-JSON.md). It turns each line into readable log
 * lines, counts tokens from assistant messages as they arrive (for the token cap and live
 * progress) and keeps the LAST `result` message, which alone decides the outcome. Every usage and
 * cost number is the agent's claim: one that is negative, not finite or over its ceiling counts as
 * zero, with a `[baton] refused …` line in the log (budgets/claims.ts).
 */

export interface ResultSummary {
  subtype: string;
  /** `is_error` as sent; null when the message has none (then success cannot be told from failure). */
  isError: boolean | null;
  /** `result` text: the final answer, or the error text when `isError`. Absent on error subtypes. */
  text?: string;
  /** `errors` of the error subtypes. */
  errors: string[];
  numTurns?: number;
  apiErrorStatus?: number;
  costUsd: number | null;
  usage: AgentUsage | null;
}

export interface StreamParser {
  /** Returns the log lines for one stdout line (garbage is kept verbatim). */
  push(line: string): string[];
  /** The last `result` message seen, if any. */
  readonly result: ResultSummary | null;
  /** Tokens of all assistant messages so far (each message id counted once). */
  readonly streamedUsage: AgentUsage;
  /**
   * input + output of `streamedUsage`: what the token cap counts, as the run's tokens and the
   * daily budgets do (cache reads and writes are in `streamedUsage`, and counted by none of them).
   */
  readonly streamedTokens: number;
  /** `session_id` of the init message (every message carries it): what `--resume` takes. */
  readonly sessionId: string | null;
  /** `model` of the init message. */
  readonly model: string | null;
}

/** What a result message means for the run; `kind` is set on failures (a FAILURE_KIND). */
export interface ResultOutcome {
  status: AgentStatus;
  summary: string;
  kind?: string;
}

const MAX_SNIPPET = 400;
/** Message ids whose usage is remembered (a message's blocks arrive together; a turn has few messages). */
const RECENT_MESSAGE_IDS = 1_000;

export function createStreamParser(): StreamParser {
  let result: ResultSummary | null = null;
  // Claude Code emits one `assistant` line per content block and repeats the message's usage on
  // each, so usage is keyed by message id to count every API response once. The blocks of one
  // message come one after another, so only recent ids are remembered (memory stays bounded
  // whatever the number of messages). The total is kept up to date as messages arrive: summing
  // the map on every line made parsing quadratic in the number of messages (40k took 28 s).
  const usageById = new Map<string, AgentUsage>();
  let total = emptyUsage();
  let sessionId: string | null = null;
  let model: string | null = null;

  return {
    get result() {
      return result;
    },
    get streamedUsage() {
      return { ...total };
    },
    get sessionId() {
      return sessionId;
    },
    get model() {
      return model;
    },
    get streamedTokens() {
      return total.inputTokens + total.outputTokens;
    },
    push(line) {
      const trimmed = line.trim();
      if (trimmed === '') return [];
      let message: unknown;
      try {
        message = JSON.parse(trimmed);
      } catch {
        return [line];
      }
      if (!isRecord(message) || typeof message.type !== 'string') return [line];
      const refused: RefusedClaim[] = [];
      const lines = describeLine(message, message.type, refused);
      return refused.length > 0 ? [...lines, ...refused.map((r) => r.line)] : lines;
    },
  };

  function describeLine(message: Record<string, unknown>, type: string, refused: RefusedClaim[]): string[] {
    switch (type) {
      case 'system':
        if (message.subtype === 'init') {
          if (typeof message.session_id === 'string') sessionId = message.session_id;
          if (typeof message.model === 'string') model = message.model;
        }
        return [describeSystem(message)];
      case 'assistant': {
        const inner = isRecord(message.message) ? message.message : {};
        const usage = snakeUsage(inner.usage, 'assistant usage', refused);
        if (usage) {
          if (typeof inner.id === 'string') {
            const before = usageById.get(inner.id);
            const after = maxUsage(before, usage);
            usageById.delete(inner.id);
            usageById.set(inner.id, after);
            if (usageById.size > RECENT_MESSAGE_IDS) usageById.delete(usageById.keys().next().value!);
            total = addUsage(before ? subtractUsage(total, before) : total, after);
          } else total = addUsage(total, usage);
        }
        return describeAssistant(message, inner);
      }
      case 'user':
        return describeUser(message);
      case 'result': {
        result = readResult(message, refused);
        return [describeResult(result)];
      }
      default:
        return [`[${type}] ${snippet(JSON.stringify(message))}`];
    }
  }
}

/**
 * What a `result` message means. Success is `subtype === "success" && is_error === false` (both:
 * API failures arrive as subtype success with is_error true), and then only when the agent took
 * a turn: a prompt the CLI ran as an unknown slash command "succeeds" with zero turns and
 * `Unknown command: /name` (or `Unknown skill: …`) having done nothing.
 */
export function judgeResult(result: ResultSummary): ResultOutcome {
  const text = result.text?.trim() ?? '';
  if (result.subtype === 'success' && result.isError === false) {
    if (/^Unknown (command|skill): /.test(text)) {
      return {
        status: 'failed',
        kind: FAILURE_KIND.noTurns,
        summary: `Claude Code ran the prompt as a slash command and answered "${firstLine(text)}" without doing anything`,
      };
    }
    if (result.numTurns === 0) {
      return {
        status: 'failed',
        kind: FAILURE_KIND.noTurns,
        summary: `the agent ended without taking a single turn (num_turns 0)${text ? `: ${firstLine(text)}` : ''}`,
      };
    }
    return { status: 'succeeded', summary: text || '(the agent gave no final text)' };
  }
  if (result.subtype === 'success' && result.isError === true) {
    const status = result.apiErrorStatus !== undefined ? ` (API status ${result.apiErrorStatus})` : '';
    return {
      status: 'failed',
      kind: apiFailureKind(result.apiErrorStatus, text),
      summary: `agent reported an error${status}: ${text || 'no error text'}`,
    };
  }
  if (result.subtype === 'success') {
    return {
      status: 'failed',
      kind: FAILURE_KIND.agentError,
      summary: `the agent's result message has subtype success but no is_error field, so it cannot be told from a failure${text ? `: ${firstLine(text)}` : ''}`,
    };
  }
  const turns = result.numTurns !== undefined ? ` after ${result.numTurns} turns` : '';
  return {
    status: 'failed',
    kind: result.subtype === 'error_max_turns' ? FAILURE_KIND.agentTurnLimit : FAILURE_KIND.agentError,
    summary: `agent stopped with ${result.subtype}${turns}${result.errors.length > 0 ? `: ${result.errors.join('; ')}` : ''}`,
  };
}

/**
 * Whether an error result is the API's passing trouble (baton retries those, runs/retries.ts) or
 * the agent's own error. Newer CLIs (≥ 2.1.110) give `api_error_status`; older ones only the text,
 * `API Error: 529 {"type":"error","error":{"type":"overloaded_error",…}}` (CLI 2.1.4 output in a
 * public log, freeideas/vecsum reports/2026-01-14-…_RESPONSE.md). Without a connection the CLI
 * ends with `API Error: Connection error.`, `API Error: Unable to connect to API…` or `API Error:
 * Connection to the API was lost (ECONNRESET)…` (texts quoted in public tests of tools that drive
 * the CLI); reference/claude-code/STREAM-JSON.md §5 says API failures are `is_error: true` results.
 */
export function apiFailureKind(status: number | undefined, text: string): string {
  // Without credentials the CLI answers `Not logged in · Please run /login`; a refused key is a 401
  // (`authentication_error`, `Invalid API key · Please run /login`), a revoked OAuth token a 403.
  if (
    status === 401 ||
    status === 403 ||
    /^Not logged in\b|Invalid API key|Missing API key|authentication_error|OAuth token (has expired|revoked)/i.test(text)
  ) {
    return FAILURE_KIND.agentAuth;
  }
  // A request the API refused as such: too long a prompt, a bad parameter (`invalid_request_error`).
  if (status === 400 || status === 413 || /API Error: 400\b|invalid_request_error|prompt is too long/i.test(text))
    return FAILURE_KIND.agentBadInput;
  if (status === 429 || /API Error: 429\b|rate_limit_error/i.test(text)) return FAILURE_KIND.agentRateLimited;
  if ((status !== undefined && status >= 500 && status <= 599) || /API Error: 5\d\d\b|overloaded_error/i.test(text)) {
    return FAILURE_KIND.agentOverloaded;
  }
  if (status === undefined && /API Error: (Connection error|Unable to connect to API|Connection to the API was lost)/i.test(text)) {
    return FAILURE_KIND.agentUnreachable;
  }
  return FAILURE_KIND.agentError;
}

function readResult(m: Record<string, unknown>, refused: RefusedClaim[]): ResultSummary {
  const costKey = ['total_cost_usd', 'total_cost', 'cost_usd'].find((k) => m[k] !== undefined && m[k] !== null);
  const cost = costKey === undefined ? null : checkClaim(m[costKey], 'costUsd', `result.${costKey}`, refused);
  return {
    subtype: typeof m.subtype === 'string' ? m.subtype : '(none)',
    isError: typeof m.is_error === 'boolean' ? m.is_error : null,
    text: typeof m.result === 'string' ? m.result : undefined,
    errors: Array.isArray(m.errors) ? m.errors.map((e) => (typeof e === 'string' ? e : JSON.stringify(e))) : [],
    numTurns: typeof m.num_turns === 'number' ? m.num_turns : undefined,
    apiErrorStatus: typeof m.api_error_status === 'number' ? m.api_error_status : undefined,
    costUsd: cost,
    usage: modelUsage(m.modelUsage, refused) ?? snakeUsage(m.usage, 'result usage', refused),
  };
}

/** Sum over models; `modelUsage` includes subagents, `usage` only the main loop. */
function modelUsage(raw: unknown, refused: RefusedClaim[]): AgentUsage | null {
  if (!isRecord(raw)) return null;
  const models = Object.entries(raw).filter((e): e is [string, Record<string, unknown>] => isRecord(e[1]));
  if (models.length === 0) return null;
  return models.reduce<AgentUsage>((sum, [model, m]) => {
    const field = (key: string) => tokens(m[key], `result modelUsage[${JSON.stringify(model.slice(0, 80))}].${key}`, refused);
    return addUsage(sum, {
      inputTokens: field('inputTokens'),
      outputTokens: field('outputTokens'),
      cacheReadInputTokens: field('cacheReadInputTokens'),
      cacheCreationInputTokens: field('cacheCreationInputTokens'),
    });
  }, emptyUsage());
}

function snakeUsage(raw: unknown, where: string, refused: RefusedClaim[]): AgentUsage | null {
  if (!isRecord(raw)) return null;
  const field = (key: string) => tokens(raw[key], `${where}.${key}`, refused);
  return {
    inputTokens: field('input_tokens'),
    outputTokens: field('output_tokens'),
    cacheReadInputTokens: field('cache_read_input_tokens'),
    cacheCreationInputTokens: field('cache_creation_input_tokens'),
  };
}

/** A token count the agent claims; a refused one (negative, not finite, absurd) counts as 0. */
function tokens(v: unknown, field: string, refused: RefusedClaim[]): number {
  return checkClaim(v, 'tokens', field, refused) ?? 0;
}

function subtractUsage(a: AgentUsage, b: AgentUsage): AgentUsage {
  return {
    inputTokens: a.inputTokens - b.inputTokens,
    outputTokens: a.outputTokens - b.outputTokens,
    cacheReadInputTokens: a.cacheReadInputTokens - b.cacheReadInputTokens,
    cacheCreationInputTokens: a.cacheCreationInputTokens - b.cacheCreationInputTokens,
  };
}

function maxUsage(a: AgentUsage | undefined, b: AgentUsage): AgentUsage {
  if (!a) return b;
  return {
    inputTokens: Math.max(a.inputTokens, b.inputTokens),
    outputTokens: Math.max(a.outputTokens, b.outputTokens),
    cacheReadInputTokens: Math.max(a.cacheReadInputTokens, b.cacheReadInputTokens),
    cacheCreationInputTokens: Math.max(a.cacheCreationInputTokens, b.cacheCreationInputTokens),
  };
}

function describeSystem(m: Record<string, unknown>): string {
  const subtype = typeof m.subtype === 'string' ? m.subtype : '';
  if (subtype === 'init') {
    const parts = [
      typeof m.model === 'string' ? `model ${m.model}` : null,
      typeof m.claude_code_version === 'string' ? `claude code ${m.claude_code_version}` : null,
      typeof m.cwd === 'string' ? `cwd ${m.cwd}` : null,
    ].filter(Boolean);
    return `[init] ${parts.join(', ') || 'session started'}`;
  }
  if (subtype === 'api_retry') {
    // The CLI retries unreachable/overloaded APIs for minutes without other output; these lines
    // are the only sign of life a person watching the log gets.
    const attempt = typeof m.attempt === 'number' ? m.attempt : '?';
    const max = typeof m.max_retries === 'number' ? m.max_retries : '?';
    const delay = typeof m.retry_delay_ms === 'number' ? ` in ${(m.retry_delay_ms / 1000).toFixed(1)} s` : '';
    const status = m.error_status !== undefined && m.error_status !== null ? ` status ${String(m.error_status)}` : '';
    const error = m.error !== undefined ? `: ${snippet(typeof m.error === 'string' ? m.error : JSON.stringify(m.error))}` : '';
    return `[api retry] attempt ${attempt}/${max}${delay}${status}${error}`;
  }
  return `[system${subtype ? `/${subtype}` : ''}] ${snippet(JSON.stringify(m))}`;
}

function describeAssistant(m: Record<string, unknown>, inner: Record<string, unknown>): string[] {
  const lines: string[] = [];
  if (typeof m.error === 'string') lines.push(`[assistant error] ${m.error}`);
  const content = Array.isArray(inner.content) ? inner.content : [];
  for (const block of content) {
    if (!isRecord(block)) continue;
    if (block.type === 'text' && typeof block.text === 'string') {
      for (const textLine of block.text.split('\n')) lines.push(`[assistant] ${textLine}`);
    } else if (block.type === 'tool_use') {
      lines.push(`[tool] ${String(block.name)} ${snippet(JSON.stringify(block.input ?? {}))}`);
    } else if (block.type === 'thinking' && typeof block.thinking === 'string') {
      lines.push(`[thinking] ${snippet(block.thinking.replace(/\s+/g, ' '))}`);
    } else {
      lines.push(`[assistant ${String(block.type)}]`);
    }
  }
  return lines.length > 0 ? lines : ['[assistant] (no content)'];
}

function describeUser(m: Record<string, unknown>): string[] {
  const inner = isRecord(m.message) ? m.message : {};
  const content = Array.isArray(inner.content) ? inner.content : [];
  const lines: string[] = [];
  for (const block of content) {
    if (!isRecord(block) || block.type !== 'tool_result') continue;
    const text =
      typeof block.content === 'string'
        ? block.content
        : Array.isArray(block.content)
          ? block.content.map((c) => (isRecord(c) && typeof c.text === 'string' ? c.text : '')).join(' ')
          : '';
    lines.push(`[${block.is_error === true ? 'tool error' : 'tool result'}] ${snippet(text.replace(/\s+/g, ' '))}`);
  }
  return lines.length > 0 ? lines : [`[user] ${snippet(JSON.stringify(inner))}`];
}

function describeResult(r: ResultSummary): string {
  const parts = [`subtype ${r.subtype}`, `is_error ${r.isError ?? '(none)'}`];
  if (r.numTurns !== undefined) parts.push(`${r.numTurns} turns`);
  if (r.costUsd !== null) parts.push(`cost $${r.costUsd.toFixed(4)}`);
  if (r.apiErrorStatus !== undefined) parts.push(`api status ${r.apiErrorStatus}`);
  const detail = r.text ?? (r.errors.length > 0 ? r.errors.join('; ') : '');
  return `[result] ${parts.join(', ')}${detail ? `: ${snippet(detail)}` : ''}`;
}

function snippet(text: string): string {
  return text.length > MAX_SNIPPET ? `${text.slice(0, MAX_SNIPPET)}…` : text;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function firstLine(text: string): string {
  const line = text.split('\n')[0] ?? '';
  return line.length > 200 ? `${line.slice(0, 200)}…` : line;
}
