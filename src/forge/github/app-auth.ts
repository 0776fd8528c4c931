import crypto from 'node:crypto';
import { ForgeError } from '../errors.js';
import { createForgeTransport } from '../transport.js';

/**
 * Authentication as a GitHub App (SOURCES.md, "GitHub App"): a JWT signed with the App's private
 * key (RS256, `iss` the App's id, at most 10 minutes long) asks GitHub for the App itself
 * (`GET /app`: its slug, hence its bot login `<slug>[bot]`) and for installation tokens
 * (`POST /app/installations/{id}/access_tokens`, one hour long). Each token baton mints is
 * narrowed to the one repository it is for, so a run's calls through the forge gateway carry a
 * credential that reaches that repository only, whatever else the App is installed on.
 */
export interface GitHubAppAuth {
  /** The App's bot account: `<slug>[bot]`, the login its comments, labels and pushes show. */
  identity(): Promise<GitHubAppIdentity>;
  /** An installation token for `owner/repo` alone: cached, minted again 5 minutes before it expires. */
  tokenFor(owner: string, repo: string): Promise<string>;
  /** What the App may do on `owner/repo`: the permissions of its installation token there (`issues: write`, …). */
  permissionsFor(owner: string, repo: string): Promise<Readonly<Record<string, string>>>;
  /** The App's one webhook (`GET /app/hook/config`); GitHub never shows its secret, only whether it has one. */
  hookConfig(): Promise<{ url: string; contentType: string; hasSecret: boolean }>;
  /** Changes only the fields given (`PATCH /app/hook/config`). */
  updateHookConfig(change: { url: string; contentType: 'json'; secret?: string }): Promise<void>;
  /** Drops the cached token of `owner/repo` (GitHub refused it: revoked, or the installation changed). */
  forget(owner: string, repo: string): void;
}

export interface GitHubAppIdentity {
  appId: number;
  slug: string;
  /** `<slug>[bot]` */
  login: string;
  /** The webhook events the App subscribes to (its settings: "Permissions & events"). */
  events: string[];
}

export interface GitHubAppAuthOptions {
  /** The REST API root (`https://api.github.com` or `<root>/api/v3`). */
  apiUrl: string;
  /** The App's id or client id (the JWT's `iss`). */
  appId: string;
  /** The App's private key, PEM. */
  privateKey: string;
  fetch?: typeof globalThis.fetch;
  /** @default 15_000 */
  timeoutMs?: number;
  /** @default Date.now */
  now?: () => number;
}

interface MintedToken {
  token: string;
  expiresAt: number;
  permissions: Readonly<Record<string, string>>;
}

/** GitHub refuses a JWT whose `exp` is more than 10 minutes ahead; 9 leaves room for clock drift. */
const JWT_LIFETIME_S = 9 * 60;
/** GitHub's advice: `iat` 60 seconds in the past, against clock drift. */
const JWT_BACKDATE_S = 60;
/** A cached JWT is signed again this long before it expires. */
const JWT_RENEW_S = 60;
/** A cached installation token is minted again this long before it expires (a run's request must not outlive it). */
const TOKEN_RENEW_MS = 5 * 60_000;

/** Whether `pem` is a private key node can sign RS256 with; the reason when it is not (never the key). */
export function privateKeyProblem(pem: string): string | undefined {
  try {
    const key = crypto.createPrivateKey(pem);
    return key.asymmetricKeyType === 'rsa' ? undefined : `is a ${key.asymmetricKeyType ?? 'non-RSA'} key; GitHub Apps sign with RSA`;
  } catch {
    return 'is not a PEM private key (the .pem file GitHub gave when the App key was generated)';
  }
}

/** The App's JWT (RFC 7519, RS256) for `now` (epoch ms). */
export function gitHubAppJwt(appId: string, privateKey: crypto.KeyObject | string, now: number): { jwt: string; expiresAt: number } {
  const iat = Math.floor(now / 1000) - JWT_BACKDATE_S;
  const exp = Math.floor(now / 1000) + JWT_LIFETIME_S;
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  // A numeric id goes as a number, as GitHub's own examples send it; a client id as the string it is.
  const iss = /^\d+$/.test(appId) ? Number(appId) : appId;
  const unsigned = `${part({ alg: 'RS256', typ: 'JWT' })}.${part({ iat, exp, iss })}`;
  const signature = crypto.sign('RSA-SHA256', Buffer.from(unsigned), privateKey).toString('base64url');
  return { jwt: `${unsigned}.${signature}`, expiresAt: exp * 1000 };
}

export function createGitHubAppAuth(options: GitHubAppAuthOptions): GitHubAppAuth {
  const now = options.now ?? Date.now;
  const key = crypto.createPrivateKey(options.privateKey);
  let signed: { jwt: string; expiresAt: number } | undefined;
  const jwt = () => {
    if (!signed || signed.expiresAt - JWT_RENEW_S * 1000 <= now()) signed = gitHubAppJwt(options.appId, key, now());
    return signed.jwt;
  };
  // A transport per call: the JWT in its headers changes every few minutes.
  const asApp = () => {
    const bearer = jwt();
    return createForgeTransport({
      forge: 'GitHub',
      apiBase: options.apiUrl.replace(/\/+$/, ''),
      token: bearer,
      fetch: options.fetch,
      timeoutMs: options.timeoutMs,
      headers: {
        authorization: `Bearer ${bearer}`,
        accept: 'application/vnd.github+json',
        'x-github-api-version': '2022-11-28',
        'user-agent': 'baton',
      },
    });
  };

  let identity: Promise<GitHubAppIdentity> | undefined;
  const installations = new Map<string, number>();
  const tokens = new Map<string, Promise<MintedToken>>();
  const keyOf = (owner: string, repo: string) => `${owner}/${repo}`.toLowerCase();

  async function installationOf(owner: string, repo: string): Promise<number> {
    const cached = installations.get(keyOf(owner, repo));
    if (cached !== undefined) return cached;
    const path = `/repos/${encodeURIComponent(owner)}/${encodeURIComponent(repo)}/installation`;
    let found: { id: number };
    try {
      found = await asApp().required<{ id: number }>('GET', path);
    } catch (err) {
      if (err instanceof ForgeError && err.status === 404)
        throw new ForgeError(
          `the GitHub App ${options.appId} is not installed on ${owner}/${repo} (GitHub: ${err.forgeMessage ?? 'Not Found'})`,
          {
            kind: 'http',
            status: 404,
            forgeMessage: err.forgeMessage,
            cause: err,
          },
        );
      throw err;
    }
    installations.set(keyOf(owner, repo), found.id);
    return found.id;
  }

  async function mint(owner: string, repo: string): Promise<MintedToken> {
    const installation = await installationOf(owner, repo);
    let answer: { token: string; expires_at: string; permissions?: Record<string, string> };
    try {
      answer = await asApp().required<typeof answer>('POST', `/app/installations/${installation}/access_tokens`, {
        repositories: [repo],
      });
    } catch (err) {
      // The installation was removed or replaced: ask for it again next time.
      if (err instanceof ForgeError && (err.status === 404 || err.status === 422)) installations.delete(keyOf(owner, repo));
      throw err;
    }
    if (typeof answer.token !== 'string' || answer.token === '')
      throw new ForgeError('GitHub POST /app/installations/{id}/access_tokens answered without a token', { kind: 'protocol' });
    const expiresAt = Date.parse(answer.expires_at);
    return {
      token: answer.token,
      // Without an expiry GitHub always sends, the token is kept for a few minutes only.
      expiresAt: Number.isNaN(expiresAt) ? now() + 2 * TOKEN_RENEW_MS : expiresAt,
      permissions: answer.permissions ?? {},
    };
  }

  async function minted(owner: string, repo: string): Promise<MintedToken> {
    const k = keyOf(owner, repo);
    let entry = tokens.get(k);
    if (entry) {
      const held = await entry.catch(() => undefined);
      if (!held || held.expiresAt - TOKEN_RENEW_MS <= now()) {
        if (tokens.get(k) === entry) tokens.delete(k);
        entry = undefined;
      }
    }
    if (!entry) {
      entry = mint(owner, repo);
      tokens.set(k, entry);
      // A failed mint is not cached either.
      entry.catch(() => tokens.get(k) === entry && tokens.delete(k));
    }
    return entry;
  }

  return {
    identity() {
      if (!identity) {
        identity = asApp()
          .required<{ id: number; slug: string; events?: string[] }>('GET', '/app')
          .then((app) => ({ appId: app.id, slug: app.slug, login: `${app.slug}[bot]`, events: app.events ?? [] }));
        // A failure is not kept: the next call asks again.
        identity.catch(() => (identity = undefined));
      }
      return identity;
    },
    async tokenFor(owner, repo) {
      return (await minted(owner, repo)).token;
    },
    async permissionsFor(owner, repo) {
      return (await minted(owner, repo)).permissions;
    },
    async hookConfig() {
      const config = await asApp().required<{ url?: string; content_type?: string; secret?: string }>('GET', '/app/hook/config');
      return { url: config.url ?? '', contentType: config.content_type ?? '', hasSecret: Boolean(config.secret) };
    },
    async updateHookConfig(change) {
      const body = { url: change.url, content_type: change.contentType, ...(change.secret ? { secret: change.secret } : {}) };
      await asApp().required<unknown>('PATCH', '/app/hook/config', body);
    },
    forget(owner, repo) {
      tokens.delete(keyOf(owner, repo));
    },
  };
}
