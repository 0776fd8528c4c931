import http from 'node:http';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, bearer, startTestApp, type TestApp } from '../helpers/app.js';
import { createSqliteTestStore, type TestStore } from '../helpers/stores.js';
import { until } from '../helpers/until.js';

/**
 * The dashboard's doors, against a real app on a real port: an unauthenticated login
 * body of hundreds of MiB, the cookie that held the raw 7-day token and outlived logout, `Secure`
 * only behind a header, and 300 wrong tokens in under 3 s. Each attack as it was reported, and that it
 * now fails.
 */

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A raw request, so a test can pick the client's address (any of 127/8) and stream a body. */
function request(
  url: string,
  options: { method?: string; path: string; headers?: Record<string, string>; body?: string; localAddress?: string },
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${url}${options.path}`,
      { method: options.method ?? 'GET', headers: options.headers, localAddress: options.localAddress, agent: false },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

const form = (token: string) => `token=${encodeURIComponent(token)}`;
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const cookieOf = (answer: Answer) => answer.headers['set-cookie']?.[0] ?? '';
const sessionId = (answer: Answer) => /baton_session=([^;]+)/.exec(cookieOf(answer))?.[1] ?? '';

describe('dashboard login and sessions', () => {
  let t: TestStore;
  let server: TestApp;
  let clock: number;

  beforeEach(async () => {
    t = await createSqliteTestStore();
    clock = Date.now();
    server = await startTestApp(t, {
      file: 'dashboard: { sessionIdleMinutes: 30, sessionMaxHours: 2, loginAttemptsPerMinute: 5, loginAttemptsPerMinuteTotal: 12 }\n',
      env: { BATON_CONFIG: 'baton.yaml' },
      deps: { now: () => clock },
    });
  });
  afterEach(async () => {
    await server?.close();
    await t?.cleanup();
  });

  const login = (token: string, extra: { headers?: Record<string, string>; localAddress?: string } = {}) =>
    request(server.url, {
      method: 'POST',
      path: '/login',
      headers: { ...FORM, ...extra.headers },
      body: form(token),
      localAddress: extra.localAddress,
    });
  const me = (id: string) => request(server.url, { path: '/api/me', headers: { cookie: `baton_session=${id}` } });

  it('refuses a 300 MiB login body after a few KiB, without reading the rest', async () => {
    // The attack: one unauthenticated request announcing 300 MiB. Nothing is read at all.
    const announced = await new Promise<Answer & { sent: number }>((resolve, reject) => {
      const req = http.request(`${server.url}/login`, {
        method: 'POST',
        headers: { ...FORM, 'content-length': String(300 * 1024 * 1024) },
        agent: false,
      });
      let sent = 0;
      const chunk = Buffer.alloc(64 * 1024, 'a');
      let answered = false;
      req.on('response', (res) => {
        answered = true;
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => {
          req.destroy();
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body, sent });
        });
      });
      req.on('error', (err) => (answered ? undefined : reject(err)));
      const pump = () => {
        while (!answered && sent < 300 * 1024 * 1024) {
          sent += chunk.length;
          if (!req.write(chunk)) return void req.once('drain', pump);
        }
      };
      pump();
    });
    expect(announced.status).toBe(413);
    expect(JSON.parse(announced.body)).toEqual({ error: { code: 'too_large', message: 'body is larger than the limit of 4096 bytes' } });
    // The answer came long before the 300 MiB could have been sent: the server never waited for them.
    expect(announced.sent).toBeLessThan(300 * 1024 * 1024);

    // Chunked, without a length: cut off once 4 KiB have streamed in.
    const chunked = await request(server.url, {
      method: 'POST',
      path: '/login',
      headers: { ...FORM, 'transfer-encoding': 'chunked' },
      body: `token=${'x'.repeat(64 * 1024)}`,
    });
    expect(chunked.status).toBe(413);
  });

  it('keeps only a random session id in the cookie, and logout ends the session on the server', async () => {
    const ok = await login(ADMIN_TOKEN);
    expect(ok.status).toBe(303);
    const cookie = cookieOf(ok);
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Strict/);
    // The issue: the cookie held the raw API token. Now it is a session id, useless as a token.
    expect(cookie).not.toContain(ADMIN_TOKEN);
    const id = sessionId(ok);
    expect(id).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect((await request(server.url, { path: '/api/runs', headers: bearer(id) })).status).toBe(401);
    expect((await me(id)).status).toBe(200);
    // Only the id's hash is stored.
    const rows = await t.store.db
      .selectFrom('dashboard_sessions' as never)
      .selectAll()
      .execute();
    expect(JSON.stringify(rows)).not.toContain(id);

    // The issue: logout only cleared the cookie. Now a kept copy of it is worth nothing afterwards.
    const out = await request(server.url, { method: 'POST', path: '/logout', headers: { cookie: `baton_session=${id}` } });
    expect(out.status).toBe(303);
    expect((await me(id)).status).toBe(401);
  });

  it('ends sessions when idle, at their absolute end, and when their token is revoked, closing its event stream', async () => {
    const idle = sessionId(await login(ADMIN_TOKEN));
    clock += 29 * 60_000;
    expect((await me(idle)).status).toBe(200);
    clock += 29 * 60_000;
    // Active every 29 minutes, it lives on; 31 minutes of silence end it.
    expect((await me(idle)).status).toBe(200);
    clock += 31 * 60_000;
    expect((await me(idle)).status).toBe(401);

    const busy = sessionId(await login(ADMIN_TOKEN));
    for (let i = 0; i < 4; i++) {
      clock += 25 * 60_000;
      expect((await me(busy)).status).toBe(200);
    }
    clock += 25 * 60_000;
    // Two hours after login, however active.
    expect((await me(busy)).status).toBe(401);

    const { token } = await server.app.tokens.create('laptop', 'read');
    const doomed = sessionId(await login(token));
    const stream = await fetch(`${server.url}/api/events`, { headers: { cookie: `baton_session=${doomed}` } });
    expect(stream.status).toBe(200);
    const reader = stream.body!.getReader();
    expect((await reader.read()).done).toBe(false);
    await server.app.tokens.revoke('laptop');
    expect((await me(doomed)).status).toBe(401);
    // The open stream is closed at its next heartbeat, not left streaming to a revoked token.
    await until(
      () =>
        reader.read().then(
          ({ done }) => done,
          () => true,
        ),
      'the event stream of a revoked token to end',
    );
  });

  it('sets Secure unless the browser and baton share the machine, and refuses plain http from elsewhere', async () => {
    // On loopback (browser and baton on one machine) plain http works: the cookie never crosses a network.
    expect(cookieOf(await login(ADMIN_TOKEN))).not.toMatch(/Secure/);
    // Reached by another name over plain http (a LAN address, a proxy that forwards the public
    // name without TLS): the issue found the cookie sent in clear. Now the login is refused.
    const elsewhere = await login(ADMIN_TOKEN, { headers: { host: 'baton.example.com' } });
    expect(elsewhere.status).toBe(403);
    expect(JSON.parse(elsewhere.body).error).toMatchObject({ code: 'insecure_transport' });
    expect(JSON.parse(elsewhere.body).error.message).toContain('docs/troubleshooting.md#dashboard-login');
    expect(elsewhere.headers['set-cookie']).toBeUndefined();
    // Behind a TLS proxy, Secure.
    const proxied = await login(ADMIN_TOKEN, { headers: { host: 'baton.example.com', 'x-forwarded-proto': 'https' } });
    expect(proxied.status).toBe(303);
    expect(cookieOf(proxied)).toMatch(/; Secure/);
    // Another site's form cannot log the victim in as the attacker.
    const forged = await login(ADMIN_TOKEN, { headers: { 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' } });
    expect(forged.status).toBe(403);
    expect(forged.headers['set-cookie']).toBeUndefined();
  });

  it('sends the cookie in clear from elsewhere only when told to, and warns about it at every start', async () => {
    const { loadConfig } = await import('../../src/server/index.js');
    const file = 'dashboard: { allowInsecureHttp: true }\n';
    const own = await createSqliteTestStore();
    const insecure = await startTestApp(own, { file, env: { BATON_CONFIG: 'baton.yaml' } });
    try {
      const plain = await request(insecure.url, {
        method: 'POST',
        path: '/login',
        headers: { ...FORM, host: 'baton.example.com' },
        body: form(ADMIN_TOKEN),
      });
      expect(plain.status).toBe(303);
      expect(cookieOf(plain)).not.toMatch(/Secure/);
      expect(loadConfig({ BATON_CONFIG: 'baton.yaml' }, insecure.dataDir).warnings.join('\n')).toContain(
        'dashboard.allowInsecureHttp is true: the dashboard session cookie is sent without Secure over plain http',
      );
    } finally {
      await insecure.close();
      await own.cleanup();
    }
  });

  it('counts failed logins per address and overall (429 with Retry-After), and never refuses a token that verifies', async () => {
    // The issue: 300 wrong tokens in 2.7 s. Now the sixth failure within a minute from one address is refused.
    const answers: Answer[] = [];
    for (let i = 0; i < 6; i++) answers.push(await login(`baton_wrong-${i}`, { localAddress: '127.0.0.2' }));
    expect(answers.slice(0, 5).map((a) => a.status)).toEqual([401, 401, 401, 401, 401]);
    const limited = answers[5]!;
    expect(limited.status).toBe(429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(limited.headers['retry-after'])).toBeLessThanOrEqual(60);
    expect(JSON.parse(limited.body).error.message).toMatch(/too many failed login attempts from this address; try again in \d+ s/);
    // The right token still gets in: only failures count, so wrong guesses cannot lock the operator out.
    expect((await login(ADMIN_TOKEN, { localAddress: '127.0.0.2' })).status).toBe(303);

    // Other addresses fail on until all of them together reach the overall limit (12): 5 so far, 7 more.
    for (let i = 0; i < 7; i++) expect((await login(`baton_wrong-${i}`, { localAddress: `127.0.0.${10 + i}` })).status).toBe(401);
    const overall = await login('baton_wrong-x', { localAddress: '127.0.0.99' });
    expect(overall.status).toBe(429);
    expect(JSON.parse(overall.body).error.message).toMatch(/from all clients together/);
    // 61 wrong logins from anywhere once locked the admin out; now the admin's token verifies and gets in.
    expect((await login(ADMIN_TOKEN, { localAddress: '127.0.0.99' })).status).toBe(303);

    // A browser gets the form again, with the reason.
    const page = await login('baton_wrong-y', { localAddress: '127.0.0.99', headers: { accept: 'text/html' } });
    expect(page.status).toBe(429);
    expect(page.body).toContain('too many failed login attempts');

    // A minute later the window has passed.
    clock += 60_000;
    expect((await login('baton_wrong-z', { localAddress: '127.0.0.2' })).status).toBe(401);
  });

  it('ignores X-Forwarded-For unless the peer is a trusted proxy, and then counts the client it names', async () => {
    // Without trusted proxies the header is the client's own words: changing it does not escape the limit.
    for (let i = 0; i < 5; i++) {
      const answer = await login(`baton_wrong-${i}`, { localAddress: '127.0.0.5', headers: { 'x-forwarded-for': `203.0.113.${i}` } });
      expect(answer.status).toBe(401);
    }
    expect((await login('baton_wrong', { localAddress: '127.0.0.5', headers: { 'x-forwarded-for': '203.0.113.77' } })).status).toBe(429);

    const own = await createSqliteTestStore();
    const proxied = await startTestApp(own, {
      file: 'http: { trustedProxies: [127.0.0.0/24] }\ndashboard: { loginAttemptsPerMinute: 2, loginAttemptsPerMinuteTotal: 100 }\n',
      env: { BATON_CONFIG: 'baton.yaml' },
    });
    try {
      const via = (token: string, forwardedFor: string) =>
        request(proxied.url, { method: 'POST', path: '/login', headers: { ...FORM, 'x-forwarded-for': forwardedFor }, body: form(token) });
      // Behind one proxy, everyone shares its address: the client it names is counted instead.
      expect((await via('baton_wrong-1', '198.51.100.6')).status).toBe(401);
      expect((await via('baton_wrong-2', '198.51.100.6')).status).toBe(401);
      expect((await via('baton_wrong-3', '198.51.100.6')).status).toBe(429);
      // A client writing its own X-Forwarded-For is still the address the proxy appended (the rightmost untrusted one).
      expect((await via('baton_wrong-4', '192.0.2.1, 198.51.100.6')).status).toBe(429);
      // Another client behind the same proxy is not locked out by the first.
      expect((await via('baton_wrong-5', '198.51.100.7')).status).toBe(401);
      expect((await via(ADMIN_TOKEN, '198.51.100.6')).status).toBe(303);
    } finally {
      await proxied.close();
      await own.cleanup();
    }
  });
});
