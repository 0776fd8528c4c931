import type {
  CoderBuildParameter,
  CoderCreateBuildRequest,
  CoderCreateWorkspaceRequest,
  CoderResponse,
  CoderUser,
  CoderWorkspace,
  CoderWorkspaceBuild,
  CoderWorkspaceList,
  CoderTemplate,
  CoderTemplateParameter,
} from './api-types.js';
import { CoderApiError, CoderPermanentError, CoderUnavailableError } from './errors.js';

export interface Clock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

export interface CoderClientOptions {
  /** Coder deployment URL, e.g. `https://coder.example.com` (without `/api/v2`). */
  url: string;
  /** Session or API token, sent as `Coder-Session-Token`. Never logged, never in errors. */
  token: string;
  /** Per-request timeout. @default 30_000 */
  timeoutMs?: number;
  /** Extra attempts after a 5xx, a reset connection or a timeout. @default 4 */
  retries?: number;
  /** First retry delay; doubles per attempt, with jitter. @default 500 */
  retryBaseMs?: number;
  /** @default 10_000 */
  retryMaxMs?: number;
  fetch?: typeof fetch;
  clock?: Clock;
  /** Called with each answer's status class, so a provider can report its health. */
  onAuthFailure?: (error: CoderPermanentError) => void;
  onSuccess?: () => void;
}

/** Strings that must never appear in an error message (tokens sent as parameters). */
export type Secrets = readonly (string | undefined)[];

interface RequestOptions {
  body?: unknown;
  /** Statuses returned to the caller as `{ status, body }` instead of thrown. */
  accept?: readonly number[];
  secrets?: Secrets;
}

type Answer<T> = { status: number; body: T };

export interface CoderClient {
  createWorkspace(user: string, request: CoderCreateWorkspaceRequest, secrets?: Secrets): Promise<Answer<CoderWorkspace | CoderResponse>>;
  /** Exact, per-owner lookup; null when Coder says 404 (missing or deleted). */
  getWorkspaceByName(user: string, name: string): Promise<CoderWorkspace | null>;
  /** null on 404 or 410 (deleted). */
  getWorkspace(id: string): Promise<CoderWorkspace | null>;
  listWorkspaces(query: { q: string; limit: number; offset: number }): Promise<CoderWorkspaceList>;
  /** 201 → the build; 409 (a build is already active) and 404/410 (gone) are returned, not thrown. */
  createBuild(workspaceId: string, request: CoderCreateBuildRequest): Promise<Answer<CoderWorkspaceBuild | CoderResponse>>;
  /**
   * Asks Coder to cancel a running build job. False when there is nothing to cancel: the job has
   * already completed or was already marked as canceled (400), the build is gone (404/410), or
   * the template does not let users cancel jobs (403).
   */
  cancelBuild(buildId: string): Promise<boolean>;
  /** A user by id, username or `me`; null when Coder knows no such user (400, or 404 on older servers). */
  getUser(user: string): Promise<CoderUser | null>;
  /** A template by id; null on 404 (missing, or not visible to this token). */
  getTemplate(id: string): Promise<CoderTemplate | null>;
  /** The rich parameters a template version declares; null on 404. */
  getTemplateVersionParameters(versionId: string): Promise<CoderTemplateParameter[] | null>;
  /**
   * The parameter values a build was made with (`GET /workspacebuilds/{id}/parameters`); null on
   * 400 or 404 (no such build). They include the workspace's secrets: read what you need, keep
   * nothing else.
   */
  getBuildParameters(buildId: string): Promise<CoderBuildParameter[] | null>;
}

const RETRYABLE_STATUS = (status: number) => status >= 500 || status === 429;

/** Thin REST client: auth header, timeouts, retries with backoff, Coder error bodies as classes. */
export function createCoderClient(options: CoderClientOptions): CoderClient {
  const base = options.url.replace(/\/+$/, '');
  const timeoutMs = options.timeoutMs ?? 30_000;
  const retries = options.retries ?? 4;
  const retryBaseMs = options.retryBaseMs ?? 500;
  const retryMaxMs = options.retryMaxMs ?? 10_000;
  const doFetch = options.fetch ?? fetch;
  const clock = options.clock ?? systemClock;

  const redact = (text: string, secrets: Secrets = []): string => {
    let out = text;
    for (const secret of [options.token, ...secrets]) {
      if (secret && secret.length >= 4) out = out.split(secret).join('[redacted]');
    }
    return out;
  };

  const backoff = (attempt: number) => {
    const ceiling = Math.min(retryMaxMs, retryBaseMs * 2 ** attempt);
    return ceiling / 2 + Math.random() * (ceiling / 2);
  };

  async function request<T>(method: string, path: string, opts: RequestOptions = {}): Promise<Answer<T>> {
    const label = `${method} /api/v2${path.split('?')[0]}`;
    let lastFailure = '';
    let lastCause: unknown;
    for (let attempt = 0; attempt <= retries; attempt++) {
      if (attempt > 0) await clock.sleep(backoff(attempt - 1));
      let response: Response;
      let text: string;
      try {
        response = await doFetch(`${base}/api/v2${path}`, {
          method,
          headers: {
            'Coder-Session-Token': options.token,
            Accept: 'application/json',
            ...(opts.body === undefined ? {} : { 'Content-Type': 'application/json' }),
          },
          body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
          signal: AbortSignal.timeout(timeoutMs),
        });
        text = await response.text();
      } catch (error) {
        // Resets, refused connections and timeouts: the request may or may not have reached
        // Coder. Every caller is idempotent by name or by re-reading state, so retrying is safe.
        lastCause = error;
        lastFailure = describeNetworkError(error, timeoutMs);
        continue;
      }
      const body = parseBody(text, response);
      if (RETRYABLE_STATUS(response.status)) {
        lastFailure = `HTTP ${response.status}: ${redact(body.message, opts.secrets)}`;
        lastCause = undefined;
        continue;
      }
      if (opts.accept?.includes(response.status)) {
        options.onSuccess?.();
        return { status: response.status, body: body as T };
      }
      if (response.status === 401 || response.status === 403) {
        const error = new CoderPermanentError(
          response.status,
          label,
          redactResponse(body, (t) => redact(t, opts.secrets)),
        );
        options.onAuthFailure?.(error);
        throw error;
      }
      options.onSuccess?.();
      if (response.ok) return { status: response.status, body: body as T };
      const safe = redactResponse(body, (t) => redact(t, opts.secrets));
      if (response.status === 400) throw new CoderPermanentError(400, label, safe);
      throw new CoderApiError(response.status, label, safe);
    }
    throw new CoderUnavailableError(label, `${redact(lastFailure)} (after ${retries + 1} attempts)`, { cause: lastCause });
  }

  const enc = encodeURIComponent;

  return {
    createWorkspace: (user, body, secrets) => request(`POST`, `/users/${enc(user)}/workspaces`, { body, accept: [409], secrets }),
    async getWorkspaceByName(user, name) {
      const answer = await request<CoderWorkspace>('GET', `/users/${enc(user)}/workspace/${enc(name)}`, { accept: [404] });
      return answer.status === 404 ? null : answer.body;
    },
    async getWorkspace(id) {
      const answer = await request<CoderWorkspace>('GET', `/workspaces/${enc(id)}`, { accept: [404, 410] });
      return answer.status === 404 || answer.status === 410 ? null : answer.body;
    },
    async listWorkspaces({ q, limit, offset }) {
      const params = new URLSearchParams({ q, limit: String(limit), offset: String(offset) });
      return (await request<CoderWorkspaceList>('GET', `/workspaces?${params}`)).body;
    },
    createBuild: (workspaceId, body) => request('POST', `/workspaces/${enc(workspaceId)}/builds`, { body, accept: [404, 409, 410] }),
    async cancelBuild(buildId) {
      // coderd/workspacebuilds.go `patchCancelWorkspaceBuild`: its only 400 answers are "Job has
      // already completed!" and "Job has already been marked as canceled!" (older releases
      // answered 412, which today only a failed `?expect_status=` gets). Both mean there is
      // nothing to cancel: the build finished between our last read and this call, or this is a
      // retried PATCH whose first answer was lost. 403: the template does not let users cancel
      // jobs; that says nothing about the token.
      const answer = await request('PATCH', `/workspacebuilds/${enc(buildId)}/cancel`, { accept: [400, 403, 404, 410, 412] });
      return answer.status >= 200 && answer.status < 300;
    },
    async getUser(user) {
      // coderd/httpmw/userparam.go: an unknown id or username is a 400 `"user" must be an
      // existing uuid or username.` (the same answer for garbage, so nothing leaks).
      const answer = await request<CoderUser>('GET', `/users/${enc(user)}`, { accept: [400, 404] });
      return answer.status === 400 || answer.status === 404 ? null : answer.body;
    },
    async getTemplate(id) {
      // An id that is not a UUID is a 400 from the path middleware, like a missing one.
      const answer = await request<CoderTemplate>('GET', `/templates/${enc(id)}`, { accept: [400, 404] });
      return answer.status === 400 || answer.status === 404 ? null : answer.body;
    },
    async getTemplateVersionParameters(versionId) {
      const answer = await request<CoderTemplateParameter[]>('GET', `/templateversions/${enc(versionId)}/rich-parameters`, {
        accept: [400, 404],
      });
      return answer.status === 400 || answer.status === 404 ? null : answer.body;
    },
    async getBuildParameters(buildId) {
      // An id that is not a UUID is a 400 from the path middleware (httpmw.ParseUUIDParam).
      const answer = await request<CoderBuildParameter[]>('GET', `/workspacebuilds/${enc(buildId)}/parameters`, { accept: [400, 404] });
      return answer.status === 400 || answer.status === 404 || !Array.isArray(answer.body) ? null : answer.body;
    },
  };
}

function parseBody(text: string, response: Response): CoderResponse {
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed && typeof parsed === 'object') return parsed as CoderResponse;
  } catch {
    // A proxy in front of Coder may answer with HTML; fall through to the status text.
  }
  return { message: response.statusText || `HTTP ${response.status}` };
}

function redactResponse(body: CoderResponse, redact: (text: string) => string): CoderResponse {
  return {
    message: redact(String(body.message ?? '')),
    ...(body.detail ? { detail: redact(String(body.detail)) } : {}),
    ...(Array.isArray(body.validations)
      ? { validations: body.validations.map((v) => ({ field: String(v.field), detail: redact(String(v.detail)) })) }
      : {}),
  };
}

function describeNetworkError(error: unknown, timeoutMs: number): string {
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) {
    return `no answer within ${timeoutMs} ms`;
  }
  const cause = error instanceof Error && error.cause instanceof Error ? error.cause : undefined;
  const code = cause && 'code' in cause ? String((cause as { code: unknown }).code) : undefined;
  const message = cause?.message ?? (error instanceof Error ? error.message : String(error));
  return code ? `${code}: ${message}` : message;
}
