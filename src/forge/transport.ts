import { ForgeError } from './errors.js';

/**
 * The HTTP exchange the GitHub and GitLab clients share: one JSON request with the account's
 * credentials, a timeout, and failures turned into `ForgeError`s that never carry the token.
 */
export interface ForgeTransportOptions {
  /** What errors name the forge as (`GitHub`, `GitLab`). */
  forge: string;
  /** The API root every path is appended to. */
  apiBase: string;
  /** Headers of every request, credentials included (scrubbed from errors by `token`). */
  headers: Record<string, string>;
  token: string;
  fetch?: typeof globalThis.fetch;
  /** @default 15_000 */
  timeoutMs?: number;
  /**
   * Whether an answer is a rate limit that passes although its status is permanent (GitHub
   * answers a spent primary rate limit with 403 and `x-ratelimit-remaining: 0`).
   */
  rateLimited?: (response: Response) => boolean;
}

export interface Exchange<T> {
  data: T | undefined;
  headers: Headers;
  status: number;
}

/** Forges' error messages are short; anything longer is an HTML error page from a proxy. */
const MAX_MESSAGE_LENGTH = 300;

export function createForgeTransport(options: ForgeTransportOptions) {
  const fetchImpl = options.fetch ?? globalThis.fetch;
  const timeoutMs = options.timeoutMs ?? 15_000;
  const origin = new URL(options.apiBase).origin;

  /** `path` is relative to the API root, or an absolute URL on the API's own origin (a `Link` header's). */
  async function exchange<T>(method: string, path: string, body?: unknown): Promise<Exchange<T>> {
    const url = path.startsWith('http') ? path : `${options.apiBase}${path}`;
    const shown = path.startsWith('http') ? new URL(path).pathname : path;
    const what = `${options.forge} ${method} ${shown.split('?')[0]}`;
    if (new URL(url).origin !== origin) throw new ForgeError(`${what}: refusing to follow a link off ${origin}`, { kind: 'protocol' });
    let response: Response;
    try {
      response = await fetchImpl(url, {
        method,
        headers: { ...options.headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (err) {
      const timedOut = err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError');
      throw new ForgeError(
        timedOut ? `${what} timed out after ${timeoutMs} ms` : `${what} failed: ${scrub(describeCause(err), options.token)}`,
        { kind: timedOut ? 'timeout' : 'network', cause: err },
      );
    }
    let text: string;
    try {
      text = await response.text();
    } catch (err) {
      throw new ForgeError(`${what} failed while reading the response: ${scrub(describeCause(err), options.token)}`, {
        kind: 'network',
        status: response.status,
        cause: err,
      });
    }
    if (!response.ok) {
      const forgeMessage = scrub(messageOf(text), options.token);
      const limited = options.rateLimited?.(response) === true;
      throw new ForgeError(`${what} failed: ${response.status}${forgeMessage ? ` ${forgeMessage}` : ''}`, {
        // A rate limit passes: told as a 429 so that it is retried, after the forge's own wait.
        kind: 'http',
        status: limited ? 429 : response.status,
        forgeMessage,
        retryAfterMs: retryAfter(response.headers.get('retry-after')) ?? (limited ? resetIn(response.headers) : undefined),
      });
    }
    if (response.status === 204 || text.trim() === '') return { data: undefined, headers: response.headers, status: response.status };
    try {
      return { data: JSON.parse(text) as T, headers: response.headers, status: response.status };
    } catch (err) {
      throw new ForgeError(`${what} answered ${response.status} with a body that is not JSON`, {
        kind: 'protocol',
        status: response.status,
        cause: err,
      });
    }
  }

  async function required<T>(method: string, path: string, body?: unknown): Promise<T> {
    const { data } = await exchange<T>(method, path, body);
    if (data === undefined)
      throw new ForgeError(`${options.forge} ${method} ${path.split('?')[0]} answered without a body`, { kind: 'protocol' });
    return data;
  }

  async function list<T>(method: string, path: string): Promise<{ items: T[]; headers: Headers }> {
    const { data, headers } = await exchange<T[]>(method, path);
    if (!Array.isArray(data))
      throw new ForgeError(`${options.forge} GET ${path.split('?')[0]} did not answer with a list`, { kind: 'protocol' });
    return { items: data, headers };
  }

  return { exchange, required, list };
}

/** The `rel="next"` URL of an RFC 8288 `Link` header (GitHub's and GitLab's pagination). */
export function nextLink(header: string | null): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(',')) {
    const match = /<([^>]+)>\s*;\s*rel="?([^";]+)"?/.exec(part.trim());
    if (match && match[2]!.split(/\s+/).includes('next')) return match[1];
  }
  return undefined;
}

/** The first copy of each item (by `id`), in order. */
export function uniqueById<T extends { id: number }>(items: T[]): T[] {
  const seen = new Set<number>();
  return items.filter((item) => !seen.has(item.id) && seen.add(item.id));
}

function messageOf(text: string): string | undefined {
  let message: unknown;
  try {
    const parsed = JSON.parse(text) as { message?: unknown; error?: unknown };
    message = parsed.message ?? parsed.error;
    if (typeof message === 'object' && message !== null) message = JSON.stringify(message);
  } catch {
    message = undefined;
  }
  if (typeof message !== 'string' || message === '') return undefined;
  return message.length > MAX_MESSAGE_LENGTH ? `${message.slice(0, MAX_MESSAGE_LENGTH)}…` : message;
}

function describeCause(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause as { code?: unknown } | undefined;
  const code = typeof cause?.code === 'string' ? cause.code : undefined;
  return code ? `${err.message} (${code})` : err.message;
}

/** A forge that echoes the credentials back must not get them into logs through our errors. */
export function scrub<T extends string | undefined>(text: T, token: string): T {
  if (text === undefined || token === '') return text;
  return text.split(token).join('********') as T;
}

function retryAfter(header: string | null): number | undefined {
  if (!header) return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

/** `x-ratelimit-reset` (epoch seconds) as a wait from now. */
function resetIn(headers: Headers): number | undefined {
  const reset = Number(headers.get('x-ratelimit-reset') ?? NaN);
  return Number.isFinite(reset) ? Math.max(0, reset * 1000 - Date.now()) : undefined;
}
