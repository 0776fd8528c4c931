import fs from 'node:fs';
import { isIP } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Hono, type Context } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { identify, peerAddress, sameOrigin, SESSION_COOKIE, type Credentials } from './auth.js';
import { limitBody, errorBody, type HttpErrorStatus } from '../web-kit/index.js';
import type { DashboardSettings } from './config-section.js';
import { createClientAddressResolver, type ClientAddressResolver } from './client-address.js';
import { createRateLimiter } from './rate-limit.js';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/** A login form holds one token (under 100 characters): a few KiB is plenty, and all an unauthenticated client may make us read. */
export const LOGIN_MAX_BODY_BYTES = 4 * 1024;

export interface DashboardRoutesOptions {
  credentials: Credentials;
  settings: DashboardSettings;
  /** The client's address behind the operator's trusted proxies (`http.trustedProxies`). */
  clientAddress?: ClientAddressResolver;
  assetsDir?: string;
  now?: () => number;
}

/**
 * The dashboard: plain HTML, CSS and ES modules from `assets/dashboard/` (no build step).
 * `GET /` shows the login form until a session is presented; `POST /login` checks a token and
 * makes a server-side session whose random id goes into an HttpOnly, SameSite=Strict cookie (Secure
 * unless on loopback), which the page's fetch and EventSource calls then carry to /api.
 * `POST /logout` ends the session on the server, not only in the browser.
 */
export function dashboardRoutes(options: DashboardRoutesOptions): Hono {
  const { credentials, settings } = options;
  const assetsDir = options.assetsDir ?? defaultAssetsDir();
  const app = new Hono();
  const read = (name: string) => fs.promises.readFile(path.join(assetsDir, name), 'utf8');
  const clientAddress = options.clientAddress ?? createClientAddressResolver([]);
  // Failed logins only: a token that verifies always gets in, so a flood of wrong guesses (from
  // one address, or from everyone behind one proxy) cannot lock the operator out.
  const failures = createRateLimiter({
    perKey: settings.loginAttemptsPerMinute,
    total: settings.loginAttemptsPerMinuteTotal,
    now: options.now,
  });

  const loginPage = async (c: Context, status: 200 | HttpErrorStatus, message?: string) => {
    const html = (await read('login.html')).replace(
      '<!--message-->',
      message ? `<p class="error" role="alert">${escapeHtml(message)}</p>` : '',
    );
    return c.html(html, status as 200, { 'cache-control': 'no-store' });
  };

  /** A refused login: the form again with the reason for a browser, the error envelope for anything else. */
  const refuse = (c: Context, status: HttpErrorStatus, code: string, message: string) =>
    (c.req.header('accept') ?? '').includes('text/html') ? loginPage(c, status, message) : c.json(errorBody(code, message), status as 400);

  app.get('/', async (c) => {
    const found = await identify(c, credentials);
    if (!found) return loginPage(c, 200);
    return c.html(await read('index.html'), 200, { 'cache-control': 'no-store' });
  });

  /** A wrong token: counted against its address; past the limit the answer is 429 rather than 401. */
  const refuseWrongToken = (c: Context) => {
    const client = clientAddress(peerAddress(c), c.req.header('x-forwarded-for')) ?? 'unknown';
    const verdict = failures.take(client);
    if (verdict.ok) return refuse(c, 401, 'unauthorized', 'That token is not valid (wrong or revoked).');
    const seconds = Math.max(1, Math.ceil(verdict.retryAfterMs / 1000));
    c.header('Retry-After', String(seconds));
    const who = verdict.reason === 'address' ? 'from this address' : 'from all clients together';
    return refuse(c, 429, 'too_many_requests', `too many failed login attempts ${who}; try again in ${seconds} s`);
  };

  app.post('/login', limitBody(LOGIN_MAX_BODY_BYTES), async (c) => {
    // Another site's form posting its own token here would log the victim in as the attacker.
    if (!sameOrigin(c)) return refuse(c, 403, 'cross_origin', "log in from the dashboard's own page");
    const transport = cookieTransport(c, settings.allowInsecureHttp);
    if (transport === 'refused') {
      return refuse(
        c,
        403,
        'insecure_transport',
        'This dashboard is reached over plain http from another machine, where the session cookie could be read on the way. ' +
          'Serve baton over HTTPS (a reverse proxy that sends X-Forwarded-Proto: https), or set dashboard.allowInsecureHttp: true ' +
          '(see docs/troubleshooting.md#dashboard-login).',
      );
    }
    const form = await c.req.parseBody().catch(() => ({}) as Record<string, unknown>);
    const raw = typeof form.token === 'string' ? form.token.trim() : '';
    const token = raw ? await credentials.tokens.verify(raw) : null;
    // Checking a token is one hash and one indexed read, so it is done even past the limit:
    // tokens are random (256 bits), so the limit bounds noise and load, not guessing odds.
    if (!token) return refuseWrongToken(c);
    const { sessionId } = await credentials.sessions.create(token);
    setCookie(c, SESSION_COOKIE, sessionId, {
      httpOnly: true,
      sameSite: 'Strict',
      secure: transport === 'secure',
      path: '/',
      maxAge: Math.floor(settings.sessionMaxAgeMs / 1000),
    });
    return c.redirect('/', 303);
  });

  app.post('/logout', async (c) => {
    const sessionId = getCookie(c, SESSION_COOKIE);
    // The session ends on the server: a copy of the cookie is worth nothing from now on.
    if (sessionId) await credentials.sessions.revoke(sessionId);
    deleteCookie(c, SESSION_COOKIE, { path: '/', secure: cookieTransport(c, settings.allowInsecureHttp) === 'secure' });
    return c.redirect('/', 303);
  });

  // Static files are public (the login page needs its stylesheet); all data comes from /api.
  app.get('/dashboard/:file', async (c) => {
    const file = c.req.param('file');
    const type = TYPES[path.extname(file)];
    if (!/^[a-z0-9-]+\.[a-z]+$/.test(file) || !type) return c.notFound();
    try {
      return c.body(await read(file), 200, { 'content-type': type, 'cache-control': 'no-cache' });
    } catch {
      return c.notFound();
    }
  });

  return app;
}

/**
 * How the session cookie may travel: `secure` (HTTPS, as the request or its proxy says), `plain`
 * (http on loopback, i.e. the browser and baton on one machine, or allowed explicitly), or
 * `refused` (plain http from elsewhere: a cookie without Secure could be read on the way, and
 * one with Secure would be dropped by the browser).
 */
export function cookieTransport(c: Context, allowInsecureHttp: boolean): 'secure' | 'plain' | 'refused' {
  // Trusting the header is safe: it can only make the cookie stricter.
  if (c.req.header('x-forwarded-proto') === 'https' || new URL(c.req.url).protocol === 'https:') return 'secure';
  if (allowInsecureHttp) return 'plain';
  return isLoopback(peerAddress(c)) && isLoopbackHost(c.req.header('host')) ? 'plain' : 'refused';
}

function isLoopback(address: string | undefined): boolean {
  if (!address) return false;
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address;
  return address === '::1' || (isIP(v4) === 4 && v4.startsWith('127.'));
}

/** The name the browser used: a proxy on this machine forwarding a public name is not loopback. */
function isLoopbackHost(host: string | undefined): boolean {
  if (!host) return false;
  const name = host.startsWith('[') ? host.slice(1, host.indexOf(']')) : host.replace(/:\d+$/, '');
  return name === 'localhost' || name.endsWith('.localhost') || isLoopback(name);
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}

/** `assets/dashboard` of the package, found from this file whether it runs from src/ (tsx) or dist/. */
export function defaultAssetsDir(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return path.join(dir, 'assets', 'dashboard');
    dir = path.dirname(dir);
  }
  throw new Error('cannot find the baton package root (package.json) to serve the dashboard from');
}
