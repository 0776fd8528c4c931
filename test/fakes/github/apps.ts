/**
 * The fake GitHub's Apps (SOURCES.md, "GitHub Apps"): a JWT signed with the App's key (RS256,
 * `iss` the App's id, `exp` at most 10 minutes ahead) reaches `/app…` and
 * `GET /repos/{o}/{r}/installation`; an installation token (`ghs_…`, one hour) acts as the bot user
 * `<slug>[bot]` on the repositories it was minted for only: another repository is 404, `GET /user`
 * is 403 "Resource not accessible by integration".
 */
import crypto from 'node:crypto';
import type { Context, Hono } from 'hono';
import type { AppRecord, FakeGitHubState, InstallationRecord, UserRecord } from './state.js';

type Env = { Variables: { user: UserRecord | undefined; app?: AppRecord; installation?: boolean } };
type Fail = (c: Context, status: number, message: string, extra?: Record<string, unknown>) => Response;

/** The installation tokens' lifetime: one hour. */
const TOKEN_LIFETIME_MS = 60 * 60_000;
/** GitHub allows `exp` at most 10 minutes after now. */
const MAX_JWT_AHEAD_S = 600;

export function isJwt(token: string): boolean {
  return /^[\w-]+\.[\w-]+\.[\w-]+$/.test(token);
}

/** The App a JWT is signed by, or GitHub's 401 message. */
export function appOfJwt(state: FakeGitHubState, jwt: string): AppRecord | string {
  const undecodable = 'A JSON web token could not be decoded';
  const [head, body, signature] = jwt.split('.') as [string, string, string];
  let header: { alg?: unknown };
  let claims: { iat?: unknown; exp?: unknown; iss?: unknown };
  try {
    header = JSON.parse(Buffer.from(head, 'base64url').toString()) as typeof header;
    claims = JSON.parse(Buffer.from(body, 'base64url').toString()) as typeof claims;
  } catch {
    return undecodable;
  }
  if (header.alg !== 'RS256') return undecodable;
  const app = state.apps.get(Number(claims.iss));
  if (!app) return 'Integration not found';
  if (!crypto.verify('RSA-SHA256', Buffer.from(`${head}.${body}`), app.publicKey, Buffer.from(signature, 'base64url'))) return undecodable;
  const now = Math.floor(state.now().getTime() / 1000);
  if (!Number.isInteger(claims.iat) || (claims.iat as number) > now + 60)
    return "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued";
  if (!Number.isInteger(claims.exp) || (claims.exp as number) <= now)
    return "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires";
  if ((claims.exp as number) > now + MAX_JWT_AHEAD_S) return "'Expiration time' claim ('exp') is too far in the future";
  return app;
}

export function createApp(state: FakeGitHubState, options: { slug: string; owner: string; events?: string[] }): AppRecord {
  const { privateKey, publicKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const app: AppRecord = {
    id: state.id(),
    slug: options.slug,
    owner: options.owner,
    privateKey: privateKey.export({ type: 'pkcs1', format: 'pem' }).toString(),
    publicKey,
    events: options.events ?? ['issues', 'issue_comment', 'pull_request', 'pull_request_review'],
    hook: { url: '', contentType: 'json', secret: '', insecureSsl: '0' },
    installations: [],
  };
  state.apps.set(app.id, app);
  const login = `${app.slug}[bot]`;
  state.users.set(login.toLowerCase(), { id: state.id(), login, name: app.slug, siteAdmin: false, type: 'Bot' });
  return app;
}

/** Installs the App on `account`'s `repos`: its bot gets write access to them (the installation's permissions). */
export function installApp(state: FakeGitHubState, app: AppRecord, account: string, repos: string[]): InstallationRecord {
  const installation: InstallationRecord = {
    id: state.id(),
    account,
    repos: new Set(repos.map((r) => r.toLowerCase())),
    permissions: { metadata: 'read', issues: 'write', pull_requests: 'write', contents: 'write' },
  };
  app.installations.push(installation);
  for (const name of repos) state.repo(account, name)?.collaborators.set(`${app.slug}[bot]`.toLowerCase(), 'write');
  return installation;
}

/**
 * What the request's installation token may not do, as GitHub answers it; undefined when the
 * token is not an installation token or the request is within its repositories.
 */
export function installationTokenRefusal(state: FakeGitHubState, c: Context, token: string, fail: Fail): Response | undefined {
  const record = state.installationTokens.get(token);
  if (!record) return undefined;
  if (record.expiresAt <= state.now().getTime()) return fail(c, 401, 'Bad credentials');
  const path = new URL(c.req.url).pathname.replace(/^\/api\/v3/, '');
  if (path === '/user') return fail(c, 403, 'Resource not accessible by integration');
  const repo = /^\/repos\/([^/]+)\/([^/]+)/.exec(path);
  if (repo && !record.repos.has(`${decodeURIComponent(repo[1]!)}/${decodeURIComponent(repo[2]!)}`.toLowerCase()))
    return fail(c, 404, 'Not Found');
  return undefined;
}

export function addGitHubAppRoutes(app: Hono<Env>, state: FakeGitHubState, fail: Fail): void {
  const theApp = (c: Context<Env>): AppRecord | Response => c.get('app') ?? fail(c, 401, 'A JSON web token could not be decoded');
  const user = (login: string) => {
    const u = state.user(login);
    return u ? { login: u.login, id: u.id, type: u.type } : { login, id: 0, type: 'User' };
  };
  const installationJson = (a: AppRecord, i: InstallationRecord) => ({
    id: i.id,
    account: user(i.account),
    app_id: a.id,
    app_slug: a.slug,
    target_type: state.user(i.account)?.type === 'Bot' ? 'Bot' : 'User',
    repository_selection: 'selected',
    permissions: i.permissions,
    events: a.events,
  });

  // The secret reads back masked, as GitHub shows it.
  const hookConfigJson = (a: AppRecord) => ({
    content_type: a.hook.contentType,
    insecure_ssl: a.hook.insecureSsl,
    url: a.hook.url,
    ...(a.hook.secret ? { secret: '********' } : {}),
  });

  app.get('/app', (c) => {
    const a = theApp(c);
    if (a instanceof Response) return a;
    return c.json({
      id: a.id,
      slug: a.slug,
      name: a.slug,
      owner: user(a.owner),
      events: a.events,
      permissions: { metadata: 'read', issues: 'write', pull_requests: 'write', contents: 'write' },
      html_url: `${new URL(c.req.url).origin}/apps/${a.slug}`,
    });
  });

  app.get('/app/hook/config', (c) => {
    const a = theApp(c);
    if (a instanceof Response) return a;
    return c.json(hookConfigJson(a));
  });

  app.patch('/app/hook/config', async (c) => {
    const a = theApp(c);
    if (a instanceof Response) return a;
    const body = (await c.req.json().catch(() => ({}))) as Record<string, unknown>;
    if (typeof body.url === 'string') a.hook.url = body.url;
    if (typeof body.content_type === 'string') a.hook.contentType = body.content_type;
    if (typeof body.secret === 'string') a.hook.secret = body.secret;
    if (typeof body.insecure_ssl === 'string') a.hook.insecureSsl = body.insecure_ssl;
    return c.json(hookConfigJson(a));
  });

  app.get('/repos/:owner/:repo/installation', (c) => {
    const a = theApp(c);
    if (a instanceof Response) return a;
    const owner = c.req.param('owner');
    const repo = c.req.param('repo');
    const found = a.installations.find((i) => i.account.toLowerCase() === owner.toLowerCase() && i.repos.has(repo.toLowerCase()));
    return found ? c.json(installationJson(a, found)) : fail(c, 404, 'Not Found');
  });

  app.post('/app/installations/:id/access_tokens', async (c) => {
    const a = theApp(c);
    if (a instanceof Response) return a;
    const installation = a.installations.find((i) => i.id === Number(c.req.param('id')));
    if (!installation) return fail(c, 404, 'Not Found');
    const body = (await c.req.json().catch(() => ({}))) as { repositories?: unknown };
    const asked = Array.isArray(body.repositories) ? body.repositories.map(String) : undefined;
    if (asked?.some((name) => !installation.repos.has(name.toLowerCase())))
      return fail(c, 422, 'There is at least one repository that does not exist or is not accessible to the parent installation.');
    const names = asked ?? [...installation.repos];
    const token = `ghs_${crypto.randomBytes(18).toString('hex')}`;
    const expiresAt = state.now().getTime() + TOKEN_LIFETIME_MS;
    state.installationTokens.set(token, {
      installation: installation.id,
      repos: new Set(names.map((n) => `${installation.account}/${n}`.toLowerCase())),
      repositoriesAsked: asked,
      expiresAt,
    });
    state.tokens.set(token, `${a.slug}[bot]`);
    return c.json(
      {
        token,
        expires_at: new Date(expiresAt).toISOString().replace(/\.\d{3}Z$/, 'Z'),
        permissions: installation.permissions,
        repository_selection: 'selected',
        repositories: names.map((n) => ({ name: n, full_name: `${installation.account}/${n}` })),
      },
      201,
    );
  });
}
