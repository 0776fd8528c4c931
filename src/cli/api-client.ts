import type { CommandIo } from './io.js';

/** An error answer of the baton API, with its `{ error: { code, message } }`. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export interface ApiClient {
  readonly baseUrl: string;
  get<T>(path: string): Promise<T>;
  /** With `body`, sent as JSON. */
  post<T>(path: string, body?: unknown): Promise<T>;
  /** The raw response of a streaming request (the event stream). */
  stream(path: string, headers?: Record<string, string>, signal?: AbortSignal): Promise<Response>;
}

/** The HTTP client of the operator commands: `BATON_URL` (default http://127.0.0.1:3000), `BATON_TOKEN`. */
export function createApiClient(io: CommandIo): ApiClient {
  const baseUrl = (io.env.BATON_URL || 'http://127.0.0.1:3000').replace(/\/+$/, '');
  const token = io.env.BATON_TOKEN;
  const doFetch = io.fetch ?? fetch;
  const headers = (): Record<string, string> => ({ accept: 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) });

  async function request(
    method: string,
    path: string,
    extra: Record<string, string> = {},
    signal?: AbortSignal,
    json?: string,
  ): Promise<Response> {
    let response: Response;
    try {
      response = await doFetch(`${baseUrl}${path}`, { method, headers: { ...headers(), ...extra }, signal, body: json });
    } catch (err) {
      if ((err as Error).name === 'AbortError') throw err;
      throw new ApiError(
        0,
        'unreachable',
        `cannot reach baton at ${baseUrl} (${(err as Error).cause ?? (err as Error).message}); set BATON_URL`,
      );
    }
    if (response.ok) return response;
    const body = (await response.json().catch(() => null)) as { error?: { code?: string; message?: string } } | null;
    let message = body?.error?.message ?? `HTTP ${response.status}`;
    if (response.status === 401)
      message = token
        ? `${message} (BATON_TOKEN was rejected)`
        : 'BATON_TOKEN is not set: mint a token with "baton token create --name NAME" and export it';
    throw new ApiError(response.status, body?.error?.code ?? 'http', message);
  }

  return {
    baseUrl,
    async get<T>(path: string) {
      return (await (await request('GET', path)).json()) as T;
    },
    async post<T>(path: string, body?: unknown) {
      const json = body === undefined ? undefined : JSON.stringify(body);
      const response = await request('POST', path, json === undefined ? {} : { 'content-type': 'application/json' }, undefined, json);
      return (await response.json()) as T;
    },
    stream(path, extra, signal) {
      return request('GET', path, { accept: 'text/event-stream', ...extra }, signal);
    },
  };
}
