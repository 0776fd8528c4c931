import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { createApp, type App } from '../../src/server/index.js';
import { createFakeCoder, type FakeCoder } from '../fakes/coder/index.js';
import { createFakeGitea, type FakeGitea } from '../fakes/gitea/index.js';
import { fixtureJson, giteaHeaders, toBody } from '../helpers/gitea-webhook.js';
import { createIngressHarness, type IngressHarness } from '../helpers/ingress.js';
import { silentLogger } from '../helpers/logger.js';
import { until } from '../helpers/until.js';

/**
 * Issue #10 item 5 at the webhook endpoint: what a delivery may name is checked before it can
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
  const deliveries = await harness.t.store.db.selectFrom('webhook_deliveries').selectAll().execute();
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
    const run = await h.engine.get(res.body.runId as number);
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
    expect(workspace.richParameters).toMatchObject({ repo_clone_url: `${gitea.url}/acme/app.git` });
    expect(JSON.stringify(workspace.richParameters)).not.toContain('evil.example');
  });
});
