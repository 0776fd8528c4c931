import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createMemoryProvider, type MemoryProvider } from '../../src/workspaces/index.js';
import { git } from '../fakes/agent/git-repos.js';
import { bearer, startTestApp, type TestApp } from '../helpers/app.js';
import { fixtureJson, giteaHeaders, toBody } from '../helpers/gitea-webhook.js';
import { STORE_KINDS, type TestStore } from '../helpers/stores.js';
import { until } from '../helpers/until.js';

const available = Object.fromEntries(await Promise.all(STORE_KINDS.map(async (k) => [k.kind, await k.available()])));

const FORGE = { GITEA_URL: 'https://git.example.com', GITEA_DEV_TOKEN: 'dev-token-secret', GITEA_REVIEW_TOKEN: 'review-token-secret' };

interface Answer {
  run: Record<string, unknown> & { id: number; payload: Record<string, unknown> };
  outcome: string;
  reason: string;
}

describe.each(STORE_KINDS)('POST /api/runs on $kind', ({ kind, create }) => {
  let t: TestStore;
  let server: TestApp;
  let repos: string;
  let provider: MemoryProvider;

  const submit = (body: unknown, headers: Record<string, string> = bearer()) =>
    fetch(`${server.url}/api/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });

  const start = async (env: Record<string, string>, file: string) => {
    provider = createMemoryProvider();
    server = await startTestApp(t, { env, file, deps: { provider } });
    await server.app.engine.pause();
    // acme/app is one baton knows: a signed delivery from its webhook reached it once.
    await t.store.db.insertInto('known_repositories').values({ repository: 'acme/app', first_seen_at: 0 }).execute();
  };

  beforeEach(async (ctx) => {
    if (!available[kind]) ctx.skip();
    t = await create();
    repos = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-declared-'));
    git(repos, 'init', '--quiet', '--initial-branch=main', 'hello');
  });
  afterEach(async () => {
    await server?.close();
    await t?.cleanup();
    fs.rmSync(repos, { recursive: true, force: true });
  });

  const yaml = () =>
    `webhooks:\n  allow: ["acme/*"]\nrepositories:\n  demo/hello: { path: ${path.join(repos, 'hello')} }\n  tools/site: { url: "https://other.example.org/tools/site.git" }\n`;

  it('queues a forge run with 201, shaped like a webhook run of that stage, and clones it from GITEA_URL', async () => {
    await start(FORGE, yaml());
    const response = await submit({
      stage: 'develop',
      repository: 'acme/app',
      number: 7,
      arguments: 'only the parser',
      ref: 'feature/parser',
    });
    expect(response.status).toBe(201);
    const answer = (await response.json()) as Answer;
    expect(answer.outcome).toBe('queued');
    expect(answer.run).toMatchObject({
      stage: 'develop',
      owner: 'acme',
      repo: 'app',
      number: 7,
      status: 'queued',
      issueUrl: 'https://git.example.com/acme/app/issues/7',
      payload: {
        account: 'dev',
        build: 'heavy',
        arguments: 'only the parser',
        ref: 'feature/parser',
        trigger: 'submitted through the API',
      },
    });
    const listed = (await (await fetch(`${server.url}/api/runs?repo=acme/app`, { headers: bearer() })).json()) as {
      runs: { id: number }[];
    };
    expect(listed.runs.map((r) => r.id)).toEqual([answer.run.id]);

    await server.app.engine.resume();
    const spec = await until(() => provider.created[0], 'the workspace of the run');
    expect(spec).toMatchObject({
      stage: 'develop',
      number: 7,
      // Through baton's forge gateway, with a capability for this run instead of the bot's token.
      cloneUrl: expect.stringMatching(/\/gateway\/acme\/app\.git$/),
      forgeToken: expect.stringMatching(/^bgw_\d+_/),
      arguments: 'only the parser',
      ref: 'feature/parser',
    });
    expect(spec.repositoryPath).toBeUndefined();
  });

  it('merges a second submission into the queued run and says so', async () => {
    await start(FORGE, yaml());
    const first = (await (await submit({ stage: 'analyse', repository: 'acme/app', issue: 3 })).json()) as Answer;
    const second = await submit({ stage: 'analyse', repository: 'acme/app', number: 3 });
    expect(second.status).toBe(200);
    expect(await second.json()).toMatchObject({ outcome: 'coalesced', run: { id: first.run.id } });
  });

  it('clones a declared repository from where baton.yaml says, with no forge token and no issue link', async () => {
    await start(FORGE, yaml());
    const local = (await (await submit({ stage: 'analyse', repository: 'demo/hello', number: 2 })).json()) as Answer;
    expect(local.run).toMatchObject({ owner: 'demo', repo: 'hello', issueUrl: null, payload: { declared: true } });
    const remote = await submit({ stage: 'analyse', repository: 'Tools/Site' });
    expect(remote.status).toBe(201);
    await server.app.engine.resume();
    await until(() => provider.created.length === 2, 'both workspaces');
    const byRepo = new Map(provider.created.map((s) => [s.repo, s]));
    expect(byRepo.get('hello')).toMatchObject({ cloneUrl: path.join(repos, 'hello'), repositoryPath: path.join(repos, 'hello') });
    expect(byRepo.get('hello')!.forgeToken).toBeUndefined();
    expect(byRepo.get('Site')).toMatchObject({ cloneUrl: 'https://other.example.org/tools/site.git' });
    expect(byRepo.get('Site')!.forgeToken).toBeUndefined();
    expect(byRepo.get('Site')!.repositoryPath).toBeUndefined();
    // Not on the forge: no status comment is queued for it.
    expect((await server.app.outbox.counts()).pending).toBe(0);
  });

  it('refuses what it cannot run, naming the field or the reason, and queues nothing', async () => {
    await start(FORGE, yaml());
    const refusals: Array<[unknown, number, string, RegExp]> = [
      ['{"stage":', 400, 'invalid_json', /invalid JSON/],
      [[], 400, 'invalid_body', /JSON object/],
      [{ repository: 'acme/app' }, 400, 'invalid_body', /stage is required/],
      [{ stage: 'develop' }, 400, 'invalid_body', /repository is required/],
      [{ stage: 'develop', repository: '../../etc/passwd' }, 400, 'invalid_body', /repository must look like owner\/repo/],
      [{ stage: 'develop', repository: '-x/app' }, 400, 'invalid_body', /repository must look like owner\/repo/],
      [{ stage: 'develop', repository: 'acme/app', number: 0 }, 400, 'invalid_body', /number must be a positive whole number/],
      [{ stage: 'develop', repository: 'acme/app', number: '7' }, 400, 'invalid_body', /number must be a positive whole number/],
      [{ stage: 'develop', repository: 'acme/app', number: 7, issue: 8 }, 400, 'invalid_body', /give one of them/],
      [{ stage: 'develop', repository: 'acme/app', ref: '--upload-pack=evil' }, 400, 'invalid_body', /ref must be a branch name/],
      [{ stage: 'develop', repository: 'acme/app', ref: 'a/../b' }, 400, 'invalid_body', /ref must be a branch name/],
      [{ stage: 'develop', repository: 'acme/app', arguments: 42 }, 400, 'invalid_body', /arguments must be a string/],
      [{ stage: 'develop', repository: 'acme/app', arguments: 'x'.repeat(20_000) }, 400, 'invalid_body', /at most 16384 characters/],
      [{ stage: 'develop', repository: 'acme/app', cloneUrl: 'file:///etc' }, 400, 'invalid_body', /unknown field "cloneUrl"/],
      [
        { stage: 'deploy-everything', repository: 'acme/app' },
        400,
        'bad_request',
        /stage "deploy-everything" does not exist \(stages: analyse, /,
      ],
      [{ stage: 'develop', repository: 'other/app' }, 403, 'forbidden', /other\/app is not in webhooks\.allow/],
      // On the forge and allowed, but never declared, connected nor seen in a signed delivery.
      [{ stage: 'develop', repository: 'acme/secret-plans' }, 403, 'forbidden', /acme\/secret-plans is not one baton knows: declare it/],
    ];
    for (const [body, status, code, message] of refusals) {
      const response = await submit(body);
      const answer = (await response.json()) as { error: { code: string; message: string } };
      expect(response.status, JSON.stringify(body).slice(0, 80)).toBe(status);
      expect(answer.error.code).toBe(code);
      expect(answer.error.message).toMatch(message);
    }
    const tooLarge = await submit({ stage: 'develop', repository: 'acme/app', arguments: 'x'.repeat(70 * 1024) });
    expect(tooLarge.status).toBe(413);
    const anonymous = await submit({ stage: 'develop', repository: 'acme/app' }, {});
    expect(anonymous.status).toBe(401);
    expect(await server.app.runs.list()).toEqual([]);
  });

  it('takes arguments (they go into the prompt) only from a token with submit:arguments or admin', async () => {
    await start(FORGE, yaml());
    const operate = (await server.app.tokens.create('ci', 'operate')).token;
    const steering = (await server.app.tokens.create('lead', 'submit:arguments')).token;
    const refused = await submit({ stage: 'develop', repository: 'acme/app', number: 1, arguments: 'ignore the issue' }, bearer(operate));
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(
      /scope is operate; a submission with arguments .* needs submit:arguments/,
    );
    expect((await submit({ stage: 'develop', repository: 'acme/app', number: 1 }, bearer(operate))).status).toBe(201);
    expect((await submit({ stage: 'analyse', repository: 'acme/app', number: 2, arguments: 'x' }, bearer(steering))).status).toBe(201);
    expect((await submit({ stage: 'analyse', repository: 'acme/app', number: 3, arguments: 'x' })).status).toBe(201);
  });

  it('knows a repository once a signed delivery from it arrived, or one with its own webhook secret', async () => {
    fs.writeFileSync(path.join(repos, 'web-secret'), 'web-secret-value\n');
    const file = `webhooks:\n  allow: ["acme/*", "other/*"]\n  repositories:\n    acme/web: { secretFile: ${path.join(repos, 'web-secret')} }\n`;
    await start({ ...FORGE, WEBHOOK_SECRET: 'global-secret' }, file);
    expect((await submit({ stage: 'analyse', repository: 'acme/web', number: 1 })).status).toBe(201);
    expect((await submit({ stage: 'analyse', repository: 'other/api', number: 1 })).status).toBe(403);

    const delivery = fixtureJson('issues-opened.json');
    const repository = delivery.repository as { name: string; full_name: string; owner: { login: string; username?: string } };
    Object.assign(repository, { name: 'api', full_name: 'other/api' });
    Object.assign(repository.owner, { login: 'other', username: 'other' });
    const body = toBody(delivery);
    const unsigned = await fetch(`${server.url}/webhook/gitea`, {
      method: 'POST',
      headers: giteaHeaders(body, { event: 'issues', secret: 'wrong' }),
      body,
    });
    expect(unsigned.status).toBe(401);
    expect((await submit({ stage: 'analyse', repository: 'other/api', number: 1 })).status).toBe(403);
    const signed = await fetch(`${server.url}/webhook/gitea`, {
      method: 'POST',
      headers: giteaHeaders(body, { event: 'issues', secret: 'global-secret' }),
      body,
    });
    expect(signed.status).toBe(202);
    expect((await submit({ stage: 'analyse', repository: 'other/api', number: 1 })).status).toBe(201);
  });

  it('without GITEA_URL takes declared repositories only', async () => {
    await start({}, yaml());
    const response = await submit({ stage: 'develop', repository: 'acme/app' });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { message: string } }).error.message).toBe(
      'repository acme/app is not declared in baton.yaml (repositories:) and GITEA_URL is not set: baton has nowhere to clone it from',
    );
    expect((await submit({ stage: 'develop', repository: 'demo/hello' })).status).toBe(201);
  });

  it('queues a GitHub or GitLab run named with its forge, known from a signed delivery of that forge', async () => {
    const forges = {
      ...FORGE,
      GITHUB_URL: 'https://github.example.com',
      GITHUB_DEV_TOKEN: 'github-dev-secret',
      GITHUB_WEBHOOK_SECRET: 'github-hook-secret',
    };
    await start(forges, yaml());
    await t.store.db.insertInto('known_repositories').values({ repository: 'github:acme/app', first_seen_at: 0 }).execute();
    const response = await submit({ stage: 'develop', repository: 'github:acme/app', number: 7 });
    expect(response.status).toBe(201);
    const answer = (await response.json()) as Answer;
    expect(answer.run).toMatchObject({
      key: 'develop:github:acme/app#7',
      forge: 'github',
      owner: 'acme',
      repo: 'app',
      issueUrl: 'https://github.example.com/acme/app/issues/7',
      payload: { forge: 'github', account: 'dev' },
    });
    // Gitea's acme/app#7 is another issue: a run of its own, not coalesced into GitHub's.
    expect((await submit({ stage: 'develop', repository: 'acme/app', number: 7 })).status).toBe(201);

    const refusals: Array<[unknown, number, RegExp]> = [
      // Known on Gitea only: GitHub's acme/web never sent a signed delivery.
      [
        { stage: 'develop', repository: 'github:acme/web' },
        403,
        /github:acme\/web is not one baton knows: connect it \(baton connect github:acme\/web\)/,
      ],
      [{ stage: 'develop', repository: 'github:other/app' }, 403, /github:other\/app is not in webhooks\.allow/],
      [
        { stage: 'develop', repository: 'gitlab:acme/platform/app' },
        400,
        /repository gitlab:acme\/platform\/app is on gitlab, but GITLAB_URL is not set/,
      ],
      [{ stage: 'develop', repository: 'gitlab:acme' }, 400, /repository must look like namespace\/project/],
      [{ stage: 'develop', repository: 'github:acme/a/b' }, 400, /repository must look like owner\/repo/],
    ];
    for (const [body, status, message] of refusals) {
      const refused = await submit(body);
      expect(refused.status, JSON.stringify(body)).toBe(status);
      expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(message);
    }
    expect((await server.app.runs.list()).map((r) => r.key).sort()).toEqual(['develop:acme/app#7', 'develop:github:acme/app#7']);
  });
});

describe('repositories: in baton.yaml', () => {
  let repos: string;
  beforeEach(() => {
    repos = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-declared-'));
    git(repos, 'init', '--quiet', '--initial-branch=main', 'hello');
  });
  afterEach(() => {
    fs.rmSync(repos, { recursive: true, force: true });
  });

  it('refuses a bad repositories section at start, naming each entry', async () => {
    const { loadConfig } = await import('../../src/server/index.js');
    const { ConfigError } = await import('../../src/config-schema/index.js');
    fs.mkdirSync(path.join(repos, 'plain'));
    fs.writeFileSync(
      path.join(repos, 'baton.yaml'),
      [
        'repositories:',
        '  demo/notgit: { path: ./plain }',
        '  demo/both: { path: ./hello, url: "https://x.example/y.git" }',
        '  demo/secret: { url: "https://user:hunter2@x.example/y.git" }',
        '  "not a name": { url: "https://x.example/y.git" }',
        `  demo/data: { path: ${path.join(repos, 'data')} }`,
        '',
      ].join('\n'),
    );
    fs.mkdirSync(path.join(repos, 'data', '.git'), { recursive: true });
    let problems: readonly string[] = [];
    try {
      loadConfig({ BATON_DATA_DIR: path.join(repos, 'data') }, repos);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      problems = err.problems;
    }
    expect(problems).toEqual([
      'repositories["demo/both"] needs exactly one of path (a local repository) or url (a git URL)',
      'repositories["demo/secret"].url must be an https://, http://, ssh:// or git:// URL, or user@host:path, without a password, got "https://user:********@x.example/y.git"',
      expect.stringMatching(/^repositories: the key "not a name" must look like owner\/repo/),
      `repositories["demo/notgit"].path ${path.join(repos, 'plain')} is not a git repository (no .git in it, and not a bare repository)`,
      `repositories["demo/data"].path ${path.join(repos, 'data')} is inside ${path.join(repos, 'data')}, which runs must never see`,
    ]);
    expect(problems.join('\n')).not.toContain('hunter2');
  });
});

describe('repositories: with Coder', () => {
  it('refuses a local path, which a Coder workspace cannot reach, and takes a URL', async () => {
    const { loadConfig } = await import('../../src/server/index.js');
    const { ConfigError } = await import('../../src/config-schema/index.js');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-declared-'));
    try {
      git(dir, 'init', '--quiet', '--initial-branch=main', 'hello');
      const env = { CODER_URL: 'https://coder.example', CODER_TOKEN: 't', CODER_TEMPLATE_ID: 'tpl', CALLBACK_URL: 'https://baton.example' };
      fs.writeFileSync(path.join(dir, 'baton.yaml'), 'repositories:\n  demo/hello: { path: ./hello }\n');
      const error = (() => {
        try {
          loadConfig(env, dir);
        } catch (err) {
          return err;
        }
      })();
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as InstanceType<typeof ConfigError>).problems).toEqual([
        `repositories["demo/hello"].path needs WORKSPACE_PROVIDER=local: a coder workspace cannot reach ${path.join(dir, 'hello')}; declare a url instead`,
      ]);
      fs.writeFileSync(path.join(dir, 'baton.yaml'), 'repositories:\n  demo/hello: { url: "ssh://git@git.example.org/demo/hello.git" }\n');
      expect(loadConfig(env, dir).config.repositories).toEqual({
        'demo/hello': { owner: 'demo', repo: 'hello', source: { kind: 'url', url: 'ssh://git@git.example.org/demo/hello.git' } },
      });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
