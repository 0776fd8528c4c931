import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Hono, type Context } from 'hono';
import { deleteCookie, setCookie } from 'hono/cookie';
import type { TokenStore } from '../tokens/index.js';
import { presentedToken, SESSION_COOKIE } from './auth.js';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/** The session lasts as long as the token; the cookie only saves pasting it again. */
const SESSION_SECONDS = 7 * 24 * 60 * 60;

/**
 * The dashboard: plain HTML, CSS and ES modules from `assets/dashboard/` (no build step).
 * `GET /` shows the login form until a token is presented; `POST /login` checks the token and
 * keeps it in an HttpOnly, SameSite=Strict cookie, which the page's fetch and EventSource calls
 * then carry to /api.
 */
export function dashboardRoutes(tokens: TokenStore, assetsDir = defaultAssetsDir()): Hono {
  const app = new Hono();
  const read = (name: string) => fs.promises.readFile(path.join(assetsDir, name), 'utf8');

  const loginPage = async (c: Context, status: 200 | 401, message?: string) => {
    const html = (await read('login.html')).replace(
      '<!--message-->',
      message ? `<p class="error" role="alert">${escapeHtml(message)}</p>` : '',
    );
    return c.html(html, status, { 'cache-control': 'no-store' });
  };

  app.get('/', async (c) => {
    const presented = presentedToken(c);
    const token = presented?.token ? await tokens.verify(presented.token) : null;
    if (!token) return loginPage(c, 200);
    return c.html(await read('index.html'), 200, { 'cache-control': 'no-store' });
  });

  app.post('/login', async (c) => {
    const form = await c.req.parseBody().catch(() => ({}) as Record<string, unknown>);
    const raw = typeof form.token === 'string' ? form.token.trim() : '';
    const token = raw ? await tokens.verify(raw) : null;
    if (!token) return loginPage(c, 401, 'That token is not valid (wrong or revoked).');
    setCookie(c, SESSION_COOKIE, raw, {
      httpOnly: true,
      sameSite: 'Strict',
      secure: isHttps(c),
      path: '/',
      maxAge: SESSION_SECONDS,
    });
    return c.redirect('/', 303);
  });

  app.post('/logout', (c) => {
    deleteCookie(c, SESSION_COOKIE, { path: '/', secure: isHttps(c) });
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

function isHttps(c: Context): boolean {
  return c.req.header('x-forwarded-proto') === 'https' || new URL(c.req.url).protocol === 'https:';
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
