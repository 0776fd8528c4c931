import { checkClaim, type RefusedClaim } from '../budgets/index.js';
import { SESSION_ID_FORM } from '../runner-contract/index.js';
import { RunFailure } from './errors.js';
import { FAILURE_KIND } from './outcome.js';
import type { AgentInvocation } from './types.js';

/** What the adapters share: small JSON readers, and the rules that keep a prompt a prompt. */

export const MAX_SNIPPET = 400;

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * A token count (or cost) the agent claims: it is untrusted, so anything but a finite number from
 * 0 to the claim ceiling counts as 0, never as a credit (budgets/claims.ts); a refused one leaves
 * its `[baton] refused …` line in `refused`, for the run's log. Absent is 0 without a line.
 */
export function num(v: unknown, field: string, refused: RefusedClaim[], kind: 'tokens' | 'costUsd' = 'tokens'): number {
  return checkClaim(v, kind, field, refused) ?? 0;
}

/** The log lines of one stdout line, with a line for each claim refused while reading it. */
export function withRefusals(lines: string[], refused: RefusedClaim[]): string[] {
  if (refused.length === 0) return lines;
  const out = [...lines, ...refused.map((r) => r.line)];
  refused.length = 0;
  return out;
}

export function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

export function snippet(text: string): string {
  return text.length > MAX_SNIPPET ? `${text.slice(0, MAX_SNIPPET)}…` : text;
}

export function firstLine(text: string): string {
  const line = text.split('\n')[0] ?? '';
  return line.length > 200 ? `${line.slice(0, 200)}…` : line;
}

/** One stdout line as a JSON object with a string `type`, or null (garbage, kept verbatim by the caller). */
export function parseEvent(line: string): Record<string, unknown> | null {
  const trimmed = line.trim();
  if (trimmed === '' || !trimmed.startsWith('{')) return null;
  try {
    const value: unknown = JSON.parse(trimmed);
    return isRecord(value) && typeof value.type === 'string' ? value : null;
  } catch {
    return null;
  }
}

/**
 * The executable and the words before baton's own arguments. A `{prompt}` placeholder belongs
 * to the text fallback: a first-class adapter builds the whole argv itself.
 */
export function splitCommand(command: readonly string[], title: string): { executable: string; prefix: string[] } {
  const [executable, ...prefix] = command;
  if (!executable) throw new RunFailure('the agent command is empty');
  if (command.some((arg) => arg.includes('{prompt}'))) {
    throw new RunFailure(
      `the agent command for ${title} names its executable only; baton adds the headless options, the model and the prompt itself: remove "{prompt}" and the options`,
    );
  }
  return { executable, prefix };
}

/** A prompt is text for the model, never a slash command: a leading newline stops the lookup. */
export function neutraliseSlash(prompt: string): string {
  return prompt.startsWith('/') ? `\n${prompt}` : prompt;
}

/** Every prompt on stdin: no size limit of argv, and nothing for an option or subcommand parser to see. */
export function viaStdin(executable: string, args: string[], prompt: string): AgentInvocation {
  return { command: executable, args, stdin: prompt, promptVia: 'stdin' };
}

/** Session ids come back from the agent's own stream (attacker-influenced): a strict form, never an option. */
const SESSION_ID = SESSION_ID_FORM;

export function checkSessionId(sessionId: string): string {
  if (!SESSION_ID.test(sessionId))
    throw new RunFailure(`the session id ${JSON.stringify(sessionId.slice(0, 80))} is not of a form baton resumes`);
  return sessionId;
}

/**
 * An API failure told by its text, for CLIs that give no status field: authentication, a request
 * the API refused as such (400, a prompt over the context window), rate limits and quotas,
 * overload and 5xx, and no connection. Transient kinds are retried by the server
 * (runs/retries.ts); authentication is not.
 */
export function failureKindFromText(text: string): string {
  if (
    /\b401\b|\b403\b|unauthori[sz]ed|invalid[ _-]?api[ _-]?key|api key not valid|incorrect api key|authenticat|not logged in|please (run )?.*login|missing .*api key|no api key/i.test(
      text,
    )
  ) {
    return FAILURE_KIND.agentAuth;
  }
  if (
    /\b400\b|bad request|invalid[ _]request|context[ _](window|length)|prompt is too long|input exceeds|maximum context|too many tokens in/i.test(
      text,
    )
  ) {
    return FAILURE_KIND.agentBadInput;
  }
  if (/\b429\b|rate[ _-]?limit|too many requests|quota|resource_exhausted|usage limit/i.test(text)) return FAILURE_KIND.agentRateLimited;
  if (/\b5\d\d\b|overloaded|internal server error|service unavailable|bad gateway|server_error/i.test(text))
    return FAILURE_KIND.agentOverloaded;
  if (
    /stream disconnected|connection (failed|error|refused|reset)|error sending request|failed to lookup address|name does not resolve|getaddrinfo|ECONNREFUSED|ECONNRESET|ENOTFOUND|ETIMEDOUT|unable to connect|fetch failed|network/i.test(
      text,
    )
  ) {
    return FAILURE_KIND.agentUnreachable;
  }
  return FAILURE_KIND.agentError;
}
