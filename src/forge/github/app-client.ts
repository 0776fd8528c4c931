import { ForgeError } from '../errors.js';
import type { ForgeClient } from '../types.js';
import type { GitHubAppAuth } from './app-auth.js';
import { createGitHubClient, type GitHubClientOptions } from './client.js';

/**
 * A `ForgeClient` that acts as a GitHub App: each call about a repository carries an installation
 * token of that repository alone (`GitHubAppAuth.tokenFor`), the one GitHub client the port
 * already has doing the rest. A token GitHub refuses with 401 (revoked, the installation
 * changed) is dropped and the call made once more with a new one. The account is the App's bot,
 * `<slug>[bot]`: `getCurrentUser` answers it from `GET /app`, since an installation token has no
 * `GET /user`.
 */
export function createGitHubAppClient(auth: GitHubAppAuth, options: Omit<GitHubClientOptions, 'token'>): ForgeClient {
  const clientFor = (token: string) => createGitHubClient({ ...options, token });
  // The client of each repository's current token, made again only when the token changes.
  const clients = new Map<string, { token: string; client: ForgeClient }>();
  const clientOf = async (owner: string, repo: string): Promise<ForgeClient> => {
    const token = await auth.tokenFor(owner, repo);
    const key = `${owner}/${repo}`.toLowerCase();
    const held = clients.get(key);
    if (held?.token === token) return held.client;
    const client = clientFor(token);
    clients.set(key, { token, client });
    return client;
  };
  // Every method of the port but getCurrentUser takes (owner, repo, …).
  const methods = Object.keys(clientFor('')) as (keyof ForgeClient)[];
  const client: Record<string, unknown> = {};
  for (const name of methods) {
    if (name === 'getCurrentUser') continue;
    client[name] = async (owner: string, repo: string, ...rest: unknown[]) => {
      const call = async () => {
        const method = (await clientOf(owner, repo))[name] as (...args: unknown[]) => Promise<unknown>;
        return method(owner, repo, ...rest);
      };
      try {
        return await call();
      } catch (err) {
        if (!(err instanceof ForgeError && err.status === 401)) throw err;
        auth.forget(owner, repo);
        return call();
      }
    };
  }
  // GitHub leaves a repository's `permissions` out for an installation token: what the App may
  // do there is its installation's permissions (`contents: write` pushes, `issues: write` labels).
  const repositoryOf = client.getRepository as ForgeClient['getRepository'];
  client.getRepository = async (owner: string, repo: string) => {
    const [repository, granted] = await Promise.all([repositoryOf(owner, repo), auth.permissionsFor(owner, repo)]);
    const push = granted.contents === 'write';
    return { ...repository, permissions: { admin: granted.administration === 'write', push, pull: true } };
  };
  client.issueWriteAccess = async (owner: string, repo: string) => {
    const granted = await auth.permissionsFor(owner, repo);
    if (granted.issues === 'write') return { allowed: true };
    return {
      allowed: false,
      reason: `the App's installation on ${owner}/${repo} has issues: ${granted.issues ?? 'none'}; labels and comments need issues: write`,
    };
  };
  client.getCurrentUser = async () => {
    const app = await auth.identity();
    // The bot's own user id is not the App's; nothing in baton reads it for an App.
    return { id: app.appId, login: app.login, fullName: app.slug, isAdmin: false };
  };
  return client as unknown as ForgeClient;
}
