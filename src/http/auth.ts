import type { Context, MiddlewareHandler } from 'hono';
import { getCookie } from 'hono/cookie';
import type { ApiToken, TokenStore } from '../tokens/index.js';
import { HttpError } from './errors.js';

/** The dashboard's session cookie; it carries the token itself (HttpOnly, SameSite=Strict). */
export const SESSION_COOKIE = 'baton_session';

/** One message for every failure, so a caller cannot tell a wrong token from a revoked one. */
const UNAUTHORIZED =
  'a valid API token is required: send "Authorization: Bearer <token>" (create one with "baton token create --name NAME")';

export type AuthEnv = { Variables: { apiToken: ApiToken } };

/** Paths under /api that keep their own authentication (the workspace's callback token). */
const WORKSPACE_CALLBACKS = /^\/api\/runs\/[^/]+\/(complete|progress)$/;

export function isWorkspaceCallback(path: string): boolean {
  return WORKSPACE_CALLBACKS.test(path);
}

/**
 * Reads the presented token: a Bearer header, else the session cookie. Null when neither is
 * there; `viaCookie` so unsafe requests riding on the cookie get the same-origin check.
 */
export function presentedToken(c: Context): { token: string; viaCookie: boolean } | null {
  const header = c.req.header('authorization');
  if (header !== undefined) {
    const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
    return match ? { token: match[1]!, viaCookie: false } : { token: '', viaCookie: false };
  }
  const cookie = getCookie(c, SESSION_COOKIE);
  return cookie ? { token: cookie, viaCookie: true } : null;
}

/**
 * Requires a live API token before anything else runs (security checks come first). Skips the
 * workspace callbacks, which authenticate with their per-run callback token.
 */
export function requireToken(tokens: TokenStore, options: { skip?: (c: Context) => boolean } = {}): MiddlewareHandler<AuthEnv> {
  return async (c, next) => {
    if (options.skip?.(c)) return next();
    const presented = presentedToken(c);
    const token = presented?.token ? await tokens.verify(presented.token) : null;
    if (!token) {
      c.header('WWW-Authenticate', 'Bearer realm="baton"');
      throw new HttpError(401, 'unauthorized', UNAUTHORIZED);
    }
    if (presented!.viaCookie && !['GET', 'HEAD', 'OPTIONS'].includes(c.req.method) && !sameOrigin(c)) {
      // SameSite=Strict already keeps other sites' forms from sending the cookie; this also
      // covers older browsers and same-site subdomains.
      throw new HttpError(403, 'cross_origin', "cookie-authenticated changes must come from the dashboard's own origin");
    }
    c.set('apiToken', token);
    return next();
  };
}

/**
 * Where a route says which scope its token needs. Scoped tokens are being added by issue #12
 * (hardening); until they land every valid token has every scope, so this checks nothing yet.
 */
export function requireScope(_c: Context<AuthEnv>, _scope: 'read' | 'operate' | 'admin'): void {}

function sameOrigin(c: Context): boolean {
  const origin = c.req.header('origin');
  if (!origin) return true;
  try {
    return new URL(origin).host === (c.req.header('host') ?? new URL(c.req.url).host);
  } catch {
    return false;
  }
}
