import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config-schema/index.js';
import { createForgeAccounts, createGitHubAppAuth, createGitHubAppClient, ForgeError, gitHubAppJwt } from '../../src/forge/index.js';
import { loadConfig } from '../../src/server/index.js';
import { buildWorkspaceSpec } from '../../src/server/workspaces.js';
import { describeForgeClientConformance } from '../conformance/forge-client.js';
import { seedGitHubConformance } from '../conformance/github-world.js';
import { createFakeGitHub, type FakeGitHub } from '../fakes/github/index.js';

/** The dev bot as a GitHub App: JWT, installation tokens narrowed to one repository, the `<slug>[bot]` identity. */

describeForgeClientConformance('GitHub App client against the fake GitHub', async () => {
  const github = await createFakeGitHub();
  const app = github.addApp('baton-ci');
  github.addRepo('acme', 'app');
  github.installApp(app.id, 'acme', ['app']);
  // Hooks need repository admin on GitHub (the App's `administration: write`, here the role).
  github.setPermission('acme', 'app', app.login, 'admin');
  const appClient = (privateKey: string) =>
    createGitHubAppClient(createGitHubAppAuth({ apiUrl: github.apiUrl, appId: String(app.id), privateKey }), { apiUrl: github.apiUrl });
  const otherKey = crypto
    .generateKeyPairSync('rsa', { modulusLength: 2048 })
    .privateKey.export({ type: 'pkcs1', format: 'pem' })
    .toString();
  return {
    ...seedGitHubConformance(github),
    client: appClient(app.privateKey),
    // A key that is not the App's: GitHub cannot verify its JWT.
    badTokenClient: appClient(otherKey),
    badToken: otherKey.split('\n')[1]!,
    botLogin: app.login,
    teardown: () => github.close(),
  };
});

describe('GitHub App authentication', () => {
  let github: FakeGitHub;
  let app: ReturnType<FakeGitHub['addApp']>;
  let clock: number;
  beforeEach(async () => {
    clock = Date.parse('2026-12-04T10:00:00Z');
    github = await createFakeGitHub({ now: () => new Date(clock) });
    app = github.addApp('baton-ci');
    github.addUser('acme');
    for (const repo of ['app', 'other', 'private']) github.addRepo('acme', repo);
    github.installApp(app.id, 'acme', ['app', 'other']);
    for (const repo of ['app', 'other', 'private']) github.addIssue('acme', repo, { title: 'x', author: 'acme' });
  });
  afterEach(async () => {
    await github.close();
  });
  const auth = () => createGitHubAppAuth({ apiUrl: github.apiUrl, appId: String(app.id), privateKey: app.privateKey, now: () => clock });

  it('signs a JWT GitHub takes: RS256, iat a minute back, exp under 10 minutes ahead, iss the App id', () => {
    const { jwt } = gitHubAppJwt(String(app.id), app.privateKey, clock);
    const [head, body, signature] = jwt.split('.') as [string, string, string];
    expect(JSON.parse(Buffer.from(head, 'base64url').toString())).toEqual({ alg: 'RS256', typ: 'JWT' });
    const claims = JSON.parse(Buffer.from(body, 'base64url').toString()) as { iat: number; exp: number; iss: number };
    expect(claims.iss).toBe(app.id);
    expect(claims.iat).toBe(clock / 1000 - 60);
    expect(claims.exp - clock / 1000).toBeGreaterThan(0);
    expect(claims.exp - clock / 1000).toBeLessThanOrEqual(600);
    const publicKey = crypto.createPublicKey(app.privateKey);
    expect(crypto.verify('RSA-SHA256', Buffer.from(`${head}.${body}`), publicKey, Buffer.from(signature, 'base64url'))).toBe(true);
  });

  it('acts as <slug>[bot] with a token narrowed to the one repository, minted once and reused', async () => {
    const client = createGitHubAppClient(auth(), { apiUrl: github.apiUrl });
    expect((await client.getCurrentUser()).login).toBe('baton-ci[bot]');
    await client.createComment('acme', 'app', 1, 'first');
    await client.createComment('acme', 'app', 1, 'second');
    expect(github.comments('acme', 'app', 1).map((c) => c.author)).toEqual(['baton-ci[bot]', 'baton-ci[bot]']);
    expect(github.mintedTokens()).toEqual([{ repos: ['acme/app'], repositoriesAsked: ['app'] }]);
    // The other repository of the installation gets a token of its own.
    await client.createComment('acme', 'other', 1, 'third');
    expect(github.mintedTokens().map((t) => t.repos)).toEqual([['acme/app'], ['acme/other']]);
  });

  it("refuses what its token was not minted for: the fake answers another repository's request 404", async () => {
    const token = await auth().tokenFor('acme', 'app');
    const res = await fetch(`${github.apiUrl}/repos/acme/other/issues/1/comments`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ body: 'escape' }),
    });
    expect(res.status).toBe(404);
    expect(github.comments('acme', 'other', 1)).toEqual([]);
  });

  it('names the App and the repository when it is not installed there', async () => {
    const client = createGitHubAppClient(auth(), { apiUrl: github.apiUrl });
    const err = await client.createComment('acme', 'private', 1, 'x').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ForgeError);
    expect(err).toMatchObject({ status: 404, retryable: false });
    expect((err as Error).message).toBe(`the GitHub App ${app.id} is not installed on acme/private (GitHub: Not Found)`);
  });

  it('mints a new token 5 minutes before the old one expires, and after GitHub refuses one', async () => {
    const shared = auth();
    const client = createGitHubAppClient(shared, { apiUrl: github.apiUrl });
    await client.createComment('acme', 'app', 1, 'at ten');
    clock += 54 * 60_000;
    await client.createComment('acme', 'app', 1, 'at ten fifty-four: the same token');
    expect(github.mintedTokens()).toHaveLength(1);
    clock += 2 * 60_000;
    await client.createComment('acme', 'app', 1, 'at ten fifty-six: a new one');
    expect(github.mintedTokens()).toHaveLength(2);
    // Revoked behind baton's back: a 401, then one new token and the call succeeds.
    github.state.tokens.delete(await shared.tokenFor('acme', 'app'));
    await client.createComment('acme', 'app', 1, 'after the revocation');
    expect(github.mintedTokens()).toHaveLength(3);
    expect(github.comments('acme', 'app', 1)).toHaveLength(4);
  });

  it("tells the App's rights from its installation, since GitHub gives an installation token no repository permissions", async () => {
    const client = createGitHubAppClient(auth(), { apiUrl: github.apiUrl });
    expect((await client.getRepository('acme', 'app')).permissions).toEqual({ admin: false, push: true, pull: true });
    expect(await client.issueWriteAccess('acme', 'app')).toEqual({ allowed: true });
  });
});

describe('GitHub App configuration', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
  });
  const keyFile = (content: string) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-github-app-'));
    dirs.push(dir);
    const file = path.join(dir, 'app.pem');
    fs.writeFileSync(file, content, { mode: 0o600 });
    return { dir, file };
  };
  const pem = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
  const base = (dir: string) => ({
    GITHUB_URL: 'https://github.com',
    GITHUB_WEBHOOK_SECRET: 'secret',
    BATON_DATA_DIR: path.join(dir, 'data'),
    BATON_CONFIG: emptyYaml(dir),
  });
  const emptyYaml = (dir: string) => {
    fs.writeFileSync(path.join(dir, 'baton.yaml'), '');
    return path.join(dir, 'baton.yaml');
  };
  const problems = (env: Record<string, string>) => {
    try {
      loadConfig(env, os.tmpdir());
      return [];
    } catch (err) {
      if (err instanceof ConfigError) return err.problems;
      throw err;
    }
  };

  it('takes GITHUB_APP_ID with GITHUB_APP_PRIVATE_KEY_FILE instead of GITHUB_DEV_TOKEN; the review bot keeps its token', () => {
    const { dir, file } = keyFile(pem);
    const { config } = loadConfig(
      { ...base(dir), GITHUB_APP_ID: '123456', GITHUB_APP_PRIVATE_KEY_FILE: file, GITHUB_REVIEW_TOKEN: 'ghp_review' },
      os.tmpdir(),
    );
    expect(config.github.app).toEqual({ id: '123456', privateKey: pem.replace(/\n$/, '') });
    expect(config.github.tokens).toEqual({ dev: undefined, review: 'ghp_review' });
    expect(Object.keys(createForgeAccounts(config)).sort()).toEqual(['github:dev', 'github:review']);
    // A run of the App's bot goes through the gateway: its workspace holds a capability, no GitHub token.
    const run = { id: 7, stage: 'develop', owner: 'acme', repo: 'app', number: 3, forge: 'github', payload: {}, agentAttempt: 1 };
    const spec = buildWorkspaceSpec(config, run as unknown as Parameters<typeof buildWorkspaceSpec>[1], 'ws', 'cb');
    expect(spec.forgeToken).toMatch(/^bgw_/);
  });

  it('refuses the App beside a dev token, an id without a key, and a key that is not one, never printing the key', () => {
    const { dir, file } = keyFile(pem);
    expect(
      problems({ ...base(dir), GITHUB_APP_ID: '1', GITHUB_APP_PRIVATE_KEY_FILE: file, GITHUB_DEV_TOKEN: 'ghp_dev' }).join('\n'),
    ).toMatch(/GITHUB_DEV_TOKEN .*and GITHUB_APP_ID are both set: the dev bot is either a user with a token or the App/);
    expect(problems({ ...base(dir), GITHUB_APP_ID: '1' }).join('\n')).toMatch(/GITHUB_APP_ID is set without GITHUB_APP_PRIVATE_KEY/);
    const bad = keyFile('-----BEGIN RSA PRIVATE KEY-----\nnot-a-key-at-all\n-----END RSA PRIVATE KEY-----\n');
    const found = problems({ ...base(bad.dir), GITHUB_APP_ID: '1', GITHUB_APP_PRIVATE_KEY_FILE: bad.file }).join('\n');
    expect(found).toContain('GITHUB_APP_PRIVATE_KEY (read from GITHUB_APP_PRIVATE_KEY_FILE) is not a PEM private key');
    expect(found).not.toContain('not-a-key-at-all');
    expect(problems({ ...base(dir) }).join('\n')).toMatch(
      /GITHUB_DEV_TOKEN .*is required when GITHUB_URL is set, unless the dev bot is a GitHub App: GITHUB_APP_ID with GITHUB_APP_PRIVATE_KEY/,
    );
  });
});
