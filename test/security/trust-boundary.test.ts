import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/server/index.js';
import { ALLOW_UNSIGNED_WARNING } from '../../src/ingress/index.js';
import { createApp, type App } from '../../src/server/index.js';
import { createFakeCoder, type FakeCoder } from '../fakes/coder/index.js';
import { createFakeGitea, type FakeGitea } from '../fakes/gitea/index.js';
import { runBaton, startServe, type ServeHandle } from '../helpers/baton-bin.js';
import { fixtureJson, giteaHeaders, readFixture, toBody } from '../helpers/gitea-webhook.js';
import { createIngressHarness, type IngressHarness } from '../helpers/ingress.js';
import { silentLogger } from '../helpers/logger.js';
import { until } from '../helpers/until.js';

/**
 * At the webhook endpoint: what a delivery may name is checked before it can
 * become a run. The repository's owner and name end up in the URL workspaces clone from, in forge
 * API paths and in the run's key, so they must be names Gitea could have made.
 */

const SECRET = 'trust-boundary-webhook-secret';
let h: IngressHarness | undefined;

afterEach(async () => {
  await h?.cleanup();
  h = undefined;
});

async function stored(harness: IngressHarness): Promise<{ runs: number; deliveries: number }> {
  const runs = await harness.t.store.db.selectFrom('runs').select('id').execute();
  const deliveries = await harness.t.store.db.selectFrom('inbox_deliveries').selectAll().execute();
  return { runs: runs.length, deliveries: deliveries.length };
}

/** issues-opened.json about another repository. */
function openedIn(owner: string, name: string): Buffer {
  const payload = fixtureJson('issues-opened.json');
  const repository = payload.repository as Record<string, unknown>;
  (repository.owner as Record<string, unknown>).login = owner;
  (repository.owner as Record<string, unknown>).username = owner;
  repository.name = name;
  repository.full_name = `${owner}/${name}`;
  return toBody(payload);
}

const UNSIGNED_REFUSED =
  "unsigned deliveries are refused: give the Gitea webhook baton's secret (WEBHOOK_SECRET, or the one baton serve generated in its data directory); see docs/troubleshooting.md#signature-failures";

describe('signatures are required', () => {
  const body = readFixture('issues-opened.json');
  const unsigned = () => giteaHeaders(body, { event: 'issues', eventType: 'issues' });

  it('refuses every delivery with 401 and keeps nothing when no secret is configured', async () => {
    h = await createIngressHarness({ secret: undefined });
    // Gitea's own form for a webhook without a secret: the signature headers are there, empty.
    expect(unsigned()['X-Gitea-Signature']).toBe('');
    expect(await h.post('/webhook/gitea', body, unsigned())).toEqual({
      status: 401,
      body: { error: { code: 'unauthorized', message: UNSIGNED_REFUSED } },
    });
    // Signed with a secret baton does not have: the same.
    const guessed = giteaHeaders(body, { event: 'issues', eventType: 'issues', secret: 'a-guess' });
    expect((await h.post('/webhook/gitea', body, guessed)).status).toBe(401);
    expect(await stored(h)).toEqual({ runs: 0, deliveries: 0 });
  });

  it('refuses a delivery without a signature, or with a wrong one, when a secret is set, and keeps nothing', async () => {
    h = await createIngressHarness({ secret: SECRET });
    const headers = unsigned();
    for (const name of ['X-Gitea-Signature', 'X-Gogs-Signature', 'X-Hub-Signature', 'X-Hub-Signature-256']) delete headers[name];
    expect(await h.post('/webhook/gitea', body, headers)).toEqual({
      status: 401,
      body: {
        error: {
          code: 'unauthorized',
          message: 'missing signature: X-Gitea-Signature is required; see docs/troubleshooting.md#signature-failures',
        },
      },
    });
    expect((await h.post('/webhook/gitea', body, unsigned())).status).toBe(401);
    expect(await stored(h)).toEqual({ runs: 0, deliveries: 0 });
    const signed = giteaHeaders(body, { event: 'issues', eventType: 'issues', secret: SECRET });
    expect((await h.post('/webhook/gitea', body, signed)).status).toBe(202);
    expect(await stored(h)).toEqual({ runs: 1, deliveries: 1 });
  });

  it('accepts unsigned deliveries with webhooks.allowUnsigned, and warns about it in the configuration', async () => {
    h = await createIngressHarness({ secret: undefined, webhooks: { allowUnsigned: true } });
    expect((await h.post('/webhook/gitea', body, unsigned())).status).toBe(202);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-trust-config-'));
    try {
      fs.writeFileSync(path.join(dir, 'baton.yaml'), 'webhooks:\n  allowUnsigned: true\n');
      const { warnings } = loadConfig({ BATON_DATA_DIR: dir }, dir);
      expect(warnings).toContain(ALLOW_UNSIGNED_WARNING);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('still requires a secret that applies, with webhooks.allowUnsigned', async () => {
    h = await createIngressHarness({ secret: SECRET, webhooks: { allowUnsigned: true } });
    expect((await h.post('/webhook/gitea', body, unsigned())).status).toBe(401);
    expect(await stored(h)).toEqual({ runs: 0, deliveries: 0 });
  });
});

describe('repository names from a delivery', () => {
  it.each([
    ['..', 'app', 'repository.owner.login ".." is not a Gitea name'],
    ['acme', '..', 'repository.name ".." is not a Gitea name'],
    ['acme', '.', 'repository.name "." is not a Gitea name'],
    ['evil.example:8080', 'app', 'repository.owner.login "evil.example:8080" is not a Gitea name'],
    ['acme', 'app/../../other', 'repository.name "app/../../other" is not a Gitea name'],
    ['acme', 'app?x=1', 'repository.name "app?x=1" is not a Gitea name'],
    ['acme', 'app#frag', 'repository.name "app#frag" is not a Gitea name'],
    ['acme', 'a pp', 'repository.name "a pp" is not a Gitea name'],
    ['@evil.example', 'app', 'repository.owner.login "@evil.example" is not a Gitea name'],
  ])('refuses owner %j, name %j with 400 naming it, and keeps nothing', async (owner, name, message) => {
    h = await createIngressHarness({ secret: SECRET });
    const body = openedIn(owner, name);
    const res = await h.post('/webhook/gitea', body, giteaHeaders(body, { event: 'issues', eventType: 'issues', secret: SECRET }));
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: { code: 'bad_request', message: `${message}: only letters, digits, "_", "." and "-" are allowed, and not "." or ".."` },
    });
    expect(await stored(h)).toEqual({ runs: 0, deliveries: 0 });
  });

  it('takes every name Gitea allows, dots and underscores included', async () => {
    h = await createIngressHarness({ secret: SECRET });
    const body = openedIn('Acme_Corp.eu', 'web-api.v2_x');
    const res = await h.post('/webhook/gitea', body, giteaHeaders(body, { event: 'issues', eventType: 'issues', secret: SECRET }));
    expect(res.status).toBe(202);
    const run = await h.runs.get(res.delivery!.runIds[0]!);
    expect(run).toMatchObject({ owner: 'Acme_Corp.eu', repo: 'web-api.v2_x', key: 'analyse:Acme_Corp.eu/web-api.v2_x#7' });
  });
});

describe('where a Coder workspace clones from', () => {
  let dir: string | undefined;
  let coder: FakeCoder | undefined;
  let gitea: FakeGitea | undefined;
  let app: App | undefined;

  afterEach(async () => {
    await app?.stop();
    await coder?.close();
    await gitea?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
    app = coder = gitea = dir = undefined;
  });

  it('is GITEA_URL/owner/repo.git, whatever clone_url the payload names', async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-trust-coder-'));
    coder = await createFakeCoder({ stepMs: 2 });
    gitea = await createFakeGitea();
    gitea.addUser('claude-dev', { token: 'dev-token' });
    gitea.addUser('claude-review', { token: 'review-token' });
    gitea.addRepo('acme', 'app');
    // The sender must be able to write (checked by default), asked by the dev bot as repository admin.
    gitea.addCollaborator('acme', 'app', 'claude-dev', 'admin');
    gitea.addUser('alice');
    gitea.addCollaborator('acme', 'app', 'alice', 'write');
    const { config } = loadConfig(
      {
        BATON_DATA_DIR: dir,
        DATABASE_URL: `sqlite:${dir}/baton.db`,
        BATON_BOOTSTRAP_TOKEN: 'baton_trust-boundary-admin-token-0123456789',
        WORKSPACE_PROVIDER: 'coder',
        CODER_URL: coder.url,
        CODER_TOKEN: coder.token,
        CODER_TEMPLATE_ID: coder.template.id,
        CALLBACK_URL: 'http://127.0.0.1:1',
        GITEA_URL: gitea.url,
        GITEA_DEV_TOKEN: 'dev-token',
        GITEA_REVIEW_TOKEN: 'review-token',
        WEBHOOK_SECRET: SECRET,
      },
      dir,
    );
    app = createApp(config, { logger: silentLogger });
    await app.start();

    const payload = fixtureJson('issues-opened.json');
    const repository = payload.repository as Record<string, unknown>;
    repository.clone_url = 'http://evil.example/acme/app.git';
    repository.html_url = 'http://evil.example/acme/app';
    const body = toBody(payload);
    const res = await app.hono.request('/webhook/gitea', {
      method: 'POST',
      body: new Uint8Array(body),
      headers: giteaHeaders(body, { event: 'issues', eventType: 'issues', secret: SECRET }),
    });
    expect(res.status).toBe(202);
    const workspace = await until(() => coder!.workspaces()[0], 'the Coder workspace of the run');
    // Through baton's forge gateway (CALLBACK_URL's /gateway), never where the payload says.
    expect(workspace.richParameters).toMatchObject({ repo_clone_url: 'http://127.0.0.1:1/gateway/acme/app.git' });
    expect(JSON.stringify(workspace.richParameters)).not.toContain('evil.example');
  });
});

describe('baton serve without WEBHOOK_SECRET', { timeout: 120_000 }, () => {
  let root: string | undefined;
  let gitea: FakeGitea | undefined;
  let server: ServeHandle | undefined;

  afterEach(async () => {
    await server?.stop();
    await gitea?.close();
    if (root) fs.rmSync(root, { recursive: true, force: true });
    server = gitea = root = undefined;
  });

  /** A release event: signed or not, it routes to no stage, so nothing runs. */
  async function deliver(secret?: string): Promise<number> {
    const body = readFixture('release-published.json');
    const res = await fetch(`${server!.url}/webhook/gitea`, {
      method: 'POST',
      headers: giteaHeaders(body, { event: 'release', eventType: 'release', secret }),
      body,
    });
    await res.body?.cancel();
    return res.status;
  }

  async function serve(extra: Record<string, string> = {}): Promise<ServeHandle> {
    gitea ??= await createFakeGitea();
    return startServe(
      {
        HOST: '127.0.0.1',
        GITEA_URL: gitea.url,
        GITEA_DEV_TOKEN: 'dev-token',
        GITEA_REVIEW_TOKEN: 'review-token',
        PUBLIC_URL: 'https://baton.example.com',
        BATON_DATA_DIR: path.join(root!, 'data'),
        DATABASE_URL: `sqlite:${path.join(root!, 'baton.db')}`,
        BATON_BOOTSTRAP_TOKEN: 'baton_trust-boundary-admin-token-0123456789',
        ...extra,
      },
      root!,
    );
  }

  it('generates one on the first start, names only its file in the log, and keeps using it', async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-trust-serve-'));
    server = await serve();
    const file = path.join(root, 'data', 'webhook-secret');
    const secret = fs.readFileSync(file, 'utf8').trim();
    expect(secret).toMatch(/^[0-9a-f]{64}$/);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    // The log line may reach the pipe after the server already listens.
    await until(() => server!.output().includes(`baton generated one in ${file} (mode 0600)`), 'the log line naming the file');
    const first = server.output();
    expect(first).toContain('https://baton.example.com/webhook/gitea');
    expect(first).not.toContain(secret);

    expect(await deliver()).toBe(401);
    expect(await deliver('a-guess')).toBe(401);
    expect(await deliver(secret)).toBe(202);

    // The next start uses the same secret and says nothing more about it; so does baton doctor.
    expect(await server.stop()).toBe(0);
    server = await serve();
    expect(fs.readFileSync(file, 'utf8').trim()).toBe(secret);
    expect(server.output()).not.toContain('baton generated one');
    expect(await deliver(secret)).toBe(202);
    const doctor = await runBaton(['doctor'], {
      cwd: root,
      env: {
        GITEA_URL: gitea!.url,
        GITEA_DEV_TOKEN: 'dev-token',
        GITEA_REVIEW_TOKEN: 'review-token',
        BATON_DATA_DIR: path.join(root, 'data'),
      },
    });
    expect(doctor.stdout).toMatch(/^ok\s+webhook secret: generated by baton serve, in .*webhook-secret: unsigned deliveries are refused$/m);
    expect(doctor.stdout + doctor.stderr).not.toContain(secret);
  });

  it('with webhooks.allowUnsigned accepts unsigned deliveries, generates nothing, and warns at every start', async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-trust-serve-'));
    fs.writeFileSync(path.join(root, 'baton.yaml'), 'webhooks:\n  allowUnsigned: true\n');
    for (const start of [1, 2]) {
      server = await serve();
      expect(server.output(), `start ${start}`).toContain(ALLOW_UNSIGNED_WARNING);
      expect(await deliver()).toBe(202);
      expect(await server.stop()).toBe(0);
      server = undefined;
    }
    expect(fs.existsSync(path.join(root, 'data', 'webhook-secret'))).toBe(false);
  });
});
