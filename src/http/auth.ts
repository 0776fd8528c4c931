import type { HttpBindings } from '@hono/node-server';
import type { Context, MiddlewareHandler } from 'hono';
import { getCookie } from 'hono/cookie';
import { scopeAllows, type ApiToken, type DashboardSession, type SessionStore, type TokenScope, type TokenStore } from '../tokens/index.js';
import { HttpError } from '../web-kit/index.js';

/** The dashboard's session cookie: a random session id (HttpOnly, SameSite=Strict, Secure but on loopback). */
export const SESSION_COOKIE = 'baton_session';

/** One message for every failure, so a caller cannot tell a wrong token from a revoked one. */
const UNAUTHORIZED =
  'a valid API token is required: send "Authorization: Bearer <token>" (create one with "baton token create --name NAME")';

/** Who is calling: the API token (its own, or the one the dashboard session was made with). */
export interface Caller {
  token: ApiToken;
  /** Present when the call rode on the dashboard's session cookie. */
  session?: DashboardSession;
  /** Whether the credential is still good (a long event stream asks now and then); never counts as activity. */
  stillValid(): Promise<boolean>;
}

export type AuthEnv = { Variables: { apiToken: ApiToken; caller: Caller } };

/** What the credential checks stand on. */
export interface Credentials {
  tokens: TokenStore;
  sessions: SessionStore;
}

/** Paths under /api that keep their own authentication (the workspace's callback token). */
const WORKSPACE_CALLBACKS = /^\/api\/runs\/[^/]+\/(complete|progress|transcript)$/;

export function isWorkspaceCallback(path: string): boolean {
  return WORKSPACE_CALLBACKS.test(path);
}

/** Routes that change who may do what: only `admin` tokens reach them, even to read. */
const ADMIN_PATHS = /^\/api\/tokens(\/|$)/;
const SAFE_METHODS = ['GET', 'HEAD', 'OPTIONS'];
/** Daily budgets: changing them needs `admin`. */
const BUDGET_PATHS = /^\/api\/budgets(\/|$)/;

/**
 * The scope a request needs. By method, so a new route is covered the day it lands: reading needs
 * `read`; anything that changes something (retry, cancel, pause, resume, replay, run submission,
 * and every route added later) needs `operate`; token management needs `admin`.
 */
export function requiredScope(method: string, path: string): TokenScope {
  if (ADMIN_PATHS.test(path)) return 'admin';
  // Raising a budget lets money be spent: admin, like token management. Reading it is `read`.
  if (BUDGET_PATHS.test(path) && !SAFE_METHODS.includes(method.toUpperCase())) return 'admin';
  return SAFE_METHODS.includes(method.toUpperCase()) ? 'read' : 'operate';
}

/**
 * Reads the presented credential: a Bearer header (an API token), else the session cookie (a
 * session id). null when neither is there or it is not live; a malformed Authorization header
 * counts as a wrong token, never as "no header, try the cookie".
 */
export async function identify(c: Context, credentials: Credentials): Promise<{ caller: Caller; viaCookie: boolean } | null> {
  const header = c.req.header('authorization');
  if (header !== undefined) {
    const raw = /^Bearer[ ]+(\S+)\s*$/i.exec(header)?.[1];
    const token = raw ? await credentials.tokens.verify(raw) : null;
    if (!token) return null;
    return { viaCookie: false, caller: { token, stillValid: async () => (await credentials.tokens.verify(raw!)) !== null } };
  }
  const sessionId = getCookie(c, SESSION_COOKIE);
  if (!sessionId) return null;
  const session = await credentials.sessions.verify(sessionId);
  if (!session) return null;
  return {
    viaCookie: true,
    caller: {
      token: session.token,
      session,
      stillValid: async () => (await credentials.sessions.verify(sessionId, { touch: false })) !== null,
    },
  };
}

/**
 * Requires a live credential whose scope allows the request, before anything else runs (security
 * checks come first). Skips the workspace callbacks, which authenticate with their per-run token.
 */
export function requireToken(credentials: Credentials, options: { skip?: (c: Context) => boolean } = {}): MiddlewareHandler<AuthEnv> {
  return async (c, next) => {
    if (options.skip?.(c)) return next();
    const found = await identify(c, credentials);
    if (!found) {
      c.header('WWW-Authenticate', 'Bearer realm="baton"');
      throw new HttpError(401, 'unauthorized', UNAUTHORIZED);
    }
    if (found.viaCookie && !SAFE_METHODS.includes(c.req.method) && !sameOrigin(c)) {
      // SameSite=Strict already keeps other sites' forms from sending the cookie; this also
      // covers older browsers and same-site subdomains.
      throw new HttpError(403, 'cross_origin', "cookie-authenticated changes must come from the dashboard's own origin");
    }
    const { token } = found.caller;
    const needed = requiredScope(c.req.method, c.req.path);
    if (!scopeAllows(token.scope, needed)) {
      throw new HttpError(
        403,
        'forbidden',
        `this token's scope is ${token.scope}; ${c.req.method} ${c.req.path.slice(0, 80)} needs ${needed}` +
          ` (mint one with "baton token create --name NAME --scope ${needed}")`,
      );
    }
    c.set('apiToken', token);
    c.set('caller', found.caller);
    return next();
  };
}

/**
 * Whether a browser says the request comes from this server's own pages (login, and changes that
 * ride on the session cookie). Browsers send `Sec-Fetch-Site` (Fetch Metadata); it is the one to
 * trust, because with `Referrer-Policy: no-referrer` they send `Origin: null` on same-origin POSTs
 * (Fetch standard, "serializing a request origin"). Without it, a real `Origin` must name this
 * host, and `null` (also what a sandboxed frame of another site sends) is refused. Clients that
 * send neither are not browsers, which cannot be tricked into carrying a cookie.
 */
export function sameOrigin(c: Context): boolean {
  const site = c.req.header('sec-fetch-site');
  if (site !== undefined) return site === 'same-origin';
  const origin = c.req.header('origin');
  if (!origin) return true;
  if (origin === 'null') return false;
  try {
    return new URL(origin).host === (c.req.header('host') ?? new URL(c.req.url).host);
  } catch {
    return false;
  }
}

/** The client's address as the socket sees it; undefined outside a real server (in-process requests). */
export function peerAddress(c: Context): string | undefined {
  return (c.env as Partial<HttpBindings> | undefined)?.incoming?.socket?.remoteAddress;
}
