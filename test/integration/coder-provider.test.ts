import { createHash } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { PermanentError } from '../../src/background/index.js';
import { CoderApiError, CoderUnavailableError, ttlForRun, type CoderProvider } from '../../src/workspaces/index.js';
import { createFakeCoder, type FakeCoder } from '../fakes/coder/index.js';
import { until } from '../helpers/until.js';
import { fastProvider, HOUR, specFor } from './coder-support.js';

let coder: FakeCoder;
let provider: CoderProvider;
beforeEach(async () => {
  coder = await createFakeCoder({ stepMs: 2 });
  provider = fastProvider(coder);
});
afterEach(async () => {
  await provider.close?.();
  await coder.close();
});

const builds = () => coder.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/builds'));
const isCreate = (r: { method: string; path: string }) => r.method === 'POST' && r.path === '/api/v2/users/me/workspaces';
const creates = () => coder.requests.filter(isCreate);
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

describe('coder provider: create', () => {
  it('creates from the template with every rich parameter and a ttl that outlasts the run', async () => {
    const ws = await provider.create(
      specFor('bt-develop-acme-app-42', {
        extra: { region: 'eu' },
        tokenCap: 500_000,
        build: 'heavy',
        setupTokens: ['forge'],
        skipPermissions: false,
      }),
    );
    expect(ws).toMatchObject({ name: 'bt-develop-acme-app-42', status: 'pending' });
    const seen = coder.workspace('bt-develop-acme-app-42');
    expect(seen?.templateId).toBe(coder.template.id);
    expect(seen?.richParameters).toEqual({
      task_type: 'develop',
      issue_number: '42',
      gitea_url: 'https://gitea.example',
      gitea_org: 'acme',
      gitea_repo: 'app',
      gitea_token: 'forge-dev-bot-secret',
      claude_oauth_token: 'claude-oauth-secret',
      repo_clone_url: 'https://gitea.example/acme/app.git',
      callback_url: 'https://baton.example/api/runs/7/callback',
      callback_token: 'callback-secret-7',
      // Whose the workspace is, for adoption: the token's hash, which the template declares.
      callback_token_hash: sha256('callback-secret-7'),
      deploy_env: 'staging',
      run_id: '7',
      max_duration_ms: String(2 * HOUR),
      token_cap: '500000',
      stage_build: 'heavy',
      setup_tokens: 'forge',
      stage_skip_permissions: 'false',
      region: 'eu',
    });
    expect(seen?.ttlMs).toBeGreaterThan(2 * HOUR);
    expect(coder.requests.every((r) => r.authenticated)).toBe(true);
    const running = await provider.waitUntilRunning('bt-develop-acme-app-42');
    expect(running.status).toBe('running');
  });

  it('sends no token cap or stage settings the run has none of, and the duration the TTL is computed from', async () => {
    await provider.close?.();
    provider = fastProvider(coder, { defaultMaxDurationMs: 3 * HOUR });
    await provider.create(specFor('bt-w', { maxDurationMs: undefined, tokenCap: undefined, setupTokens: [] }));
    const seen = coder.workspace('bt-w');
    // Not sent: the template's empty defaults leave the runner's own (no setup tokens, skip permissions).
    expect(seen?.richParameters).not.toHaveProperty('token_cap');
    expect(seen?.richParameters).not.toHaveProperty('setup_tokens');
    expect(seen?.richParameters).not.toHaveProperty('stage_skip_permissions');
    expect(seen?.richParameters.max_duration_ms).toBe(String(3 * HOUR));
    expect(seen?.ttlMs).toBe(ttlForRun(3 * HOUR));
  });

  it('sends the stage’s agent, model, command and price, and only that agent’s key under its own parameter', async () => {
    const price = { input: 1.25, cachedInput: 0.125, output: 10 };
    const secret = { name: 'CODEX_API_KEY', value: 'codex-key-secret' };
    await provider.create(
      specFor('bt-codex', { agent: 'codex', agentModel: 'gpt-5-codex', agentCommand: ['codex'], agentPrice: price, agentSecret: secret }),
    );
    expect(coder.workspace('bt-codex')?.richParameters).toMatchObject({
      agent: 'codex',
      agent_model: 'gpt-5-codex',
      agent_command: '["codex"]',
      agent_price: JSON.stringify(price),
      codex_api_key: 'codex-key-secret',
    });
    expect(coder.workspace('bt-codex')?.richParameters).not.toHaveProperty('gemini_api_key');
    // A Claude run with its defaults sends none of them, so a template from before them still takes it.
    await provider.create(specFor('bt-claude'));
    const claude = Object.keys(coder.workspace('bt-claude')?.richParameters ?? {});
    expect(claude.filter((name) => name.startsWith('agent') || name.endsWith('_api_key'))).toEqual([]);
    // An agent's key is a secret like the others: a line break is refused, naming only the parameter.
    const failure = await provider
      .create(specFor('bt-gemini', { agent: 'gemini', agentSecret: { name: 'GEMINI_API_KEY', value: 'k\nCALLBACK_TOKEN=x' } }))
      .then(
        () => undefined,
        (err: unknown) => err as Error,
      );
    expect(failure?.message).toMatch(/^Coder parameter gemini_api_key must be a single line/);
  });

  it('is idempotent by name: a second create returns the same workspace', async () => {
    const first = await provider.create(specFor('bt-w'));
    const second = await provider.create(specFor('bt-w'));
    expect(second.id).toBe(first.id);
    expect(coder.workspaces()).toHaveLength(1);
  });

  it('keeps ttl_ms inside Coder’s limits', () => {
    expect(ttlForRun(0)).toBeGreaterThanOrEqual(60_000);
    expect(ttlForRun(90 * 24 * HOUR)).toBeLessThan(30 * 24 * HOUR);
    expect(ttlForRun(HOUR)).toBeGreaterThan(HOUR);
  });

  it('creates from a pinned template version and still recognises the workspace as baton’s', async () => {
    await provider.close?.();
    provider = fastProvider(coder, { templateId: undefined, templateVersionId: coder.template.activeVersionId });
    await provider.create(specFor('bt-pinned'));
    expect(coder.requests.at(-1)?.body).toMatchObject({ template_version_id: coder.template.activeVersionId });
    expect((await provider.list()).map((w) => w.name)).toEqual(['bt-pinned']);
  });

  it('refuses a secret with a line break before calling Coder, naming the parameter and not the value', async () => {
    // The template writes the secrets as NAME=value lines; a line break could forge another line.
    const failure = await provider.create(specFor('bt-multiline', { forgeToken: 'forge-secret\nCALLBACK_TOKEN=forged' })).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(failure).toBeInstanceOf(PermanentError);
    expect((failure as Error).message).toMatch(/gitea_token must be a single line/);
    expect((failure as Error).message).not.toMatch(/forge-secret|forged/);
    expect(coder.requests).toHaveLength(0);
  });

  it('refuses an invalid name before calling Coder', async () => {
    await expect(provider.create(specFor('Bad_Name'))).rejects.toThrow(PermanentError);
    await expect(provider.create(specFor('Bad_Name'))).rejects.toThrow(/"Bad_Name" is invalid: must be alphanumeric with hyphens/);
    expect(coder.requests).toHaveLength(0);
  });

  it('needs a template or a template version', () => {
    expect(() => fastProvider(coder, { templateId: undefined })).toThrow(
      /`templateId` \(CODER_TEMPLATE_ID\) or `templateVersionId` is required/,
    );
  });

  it('sends only the pinned version when given both, as Coder refuses both at once', async () => {
    await provider.close?.();
    provider = fastProvider(coder, { templateVersionId: coder.template.activeVersionId });
    await provider.create(specFor('bt-both'));
    const body = coder.requests.at(-1)?.body as Record<string, unknown>;
    expect(body.template_version_id).toBe(coder.template.activeVersionId);
    expect(body).not.toHaveProperty('template_id');
  });
});

describe('coder provider: name already taken (409)', () => {
  const old = () => Date.now() - 2 * HOUR;

  it.each(['stopped', 'failed', 'canceled'] as const)('deletes a %s workspace, waits until it is gone and recreates', async (status) => {
    const stale = coder.seedWorkspace({ name: 'bt-w', status });
    const ws = await provider.create(specFor('bt-w'));
    expect(ws.id).not.toBe(stale.id);
    const all = coder.workspaces().filter((w) => w.name === 'bt-w');
    expect(all.find((w) => w.id === stale.id)).toMatchObject({ deleted: true });
    expect(all.filter((w) => !w.deleted)).toHaveLength(1);
  });

  it('deletes and recreates an old running workspace that no live run owns', async () => {
    const owned = vi.fn(async () => false);
    await provider.close?.();
    provider = fastProvider(coder, { isOwnedByLiveRun: owned });
    const stale = coder.seedWorkspace({ name: 'bt-w', createdAt: old() });
    const ws = await provider.create(specFor('bt-w'));
    expect(ws.id).not.toBe(stale.id);
    expect(owned).toHaveBeenCalledWith('bt-w', expect.objectContaining({ id: stale.id, status: 'running' }));
    expect(coder.workspace('bt-w')?.transitions).toEqual(['start']);
  });

  it('adopts an old running workspace that a live run owns', async () => {
    await provider.close?.();
    provider = fastProvider(coder, { isOwnedByLiveRun: async () => true });
    const mine = coder.seedWorkspace({ name: 'bt-w', createdAt: old() });
    expect((await provider.create(specFor('bt-w'))).id).toBe(mine.id);
    expect(builds()).toHaveLength(0);
  });

  it.each(['running', 'starting', 'pending'] as const)('adopts a young %s workspace without asking who owns it', async (status) => {
    const owned = vi.fn(async () => false);
    await provider.close?.();
    provider = fastProvider(coder, { isOwnedByLiveRun: owned });
    coder.faults.holdBuilds(true);
    const young = coder.seedWorkspace({ name: 'bt-w', status });
    expect((await provider.create(specFor('bt-w'))).id).toBe(young.id);
    expect(owned).not.toHaveBeenCalled();
    expect(coder.workspaces()).toHaveLength(1);
  });

  it("adopts a workspace of its name only when its build carries one of the run's token hashes (a restored database numbers runs again)", async () => {
    const warnings: string[] = [];
    const first = await provider.create(specFor('bt-w', { callbackToken: 'token-of-the-forgotten-run', adoptableTokenHashes: [] }));
    await provider.waitUntilRunning('bt-w');
    // Only the hash is kept as its identity (callback_token is the runner's own secret, as before).
    expect(coder.workspace('bt-w')?.buildParameters.callback_token_hash).toBe(sha256('token-of-the-forgotten-run'));

    // A later attempt of the same run (the engine kept the earlier token): the same workspace.
    await provider.close?.();
    provider = fastProvider(coder, { onWarning: (message) => warnings.push(message) });
    const later = await provider.create(
      specFor('bt-w', { callbackToken: 'token-of-a-later-attempt', adoptableTokenHashes: [sha256('token-of-the-forgotten-run')] }),
    );
    expect(later.id).toBe(first.id);
    expect(builds()).toHaveLength(0);

    // Another run of that name, young as the workspace is: deleted and made again, never adopted.
    const renumbered = await provider.create(specFor('bt-w', { callbackToken: 'token-of-the-new-run-7', adoptableTokenHashes: [] }));
    expect(renumbered.id).not.toBe(first.id);
    expect(coder.workspaces().find((w) => w.id === first.id)).toMatchObject({ deleted: true });
    expect(coder.workspace('bt-w')).toMatchObject({ id: renumbered.id, deleted: false });
    expect(coder.workspace('bt-w')?.buildParameters.callback_token_hash).toBe(sha256('token-of-the-new-run-7'));
    expect(warnings).toEqual([expect.stringContaining('bt-w was made for another run')]);
    expect(warnings.join()).not.toContain('token-of');
  });

  it('with a template that lacks callback_token_hash, sends none and adopts by name and age, saying so', async () => {
    const older = coder.addTemplate(
      'baton-agent-before-identity',
      coder.template.parameters.filter((p) => p.name !== 'callback_token_hash'),
    );
    const warnings: string[] = [];
    await provider.close?.();
    provider = fastProvider(coder, { templateId: older.id, onWarning: (message) => warnings.push(message) });
    const first = await provider.create(specFor('bt-w', { callbackToken: 'token-one', adoptableTokenHashes: [] }));
    // Not sent: a Coder release before terraform-provider-coder v2 refuses a parameter the template lacks.
    expect(coder.workspace('bt-w')?.richParameters).not.toHaveProperty('callback_token_hash');
    const second = await provider.create(specFor('bt-w', { callbackToken: 'token-two', adoptableTokenHashes: [] }));
    expect(second.id).toBe(first.id);
    expect(warnings).toEqual([expect.stringContaining('bt-w carries no callback_token_hash')]);
  });

  it('waits for a workspace that is still deleting, then creates', async () => {
    const going = coder.seedWorkspace({ name: 'bt-w', status: 'deleting' });
    const ws = await provider.create(specFor('bt-w'));
    expect(ws.id).not.toBe(going.id);
    expect(coder.workspaces().find((w) => w.id === going.id)?.deleted).toBe(true);
  });

  it('waits for a stop in progress to finish, then deletes and recreates', async () => {
    const stopping = coder.seedWorkspace({ name: 'bt-w', status: 'stopping' });
    const ws = await provider.create(specFor('bt-w'));
    expect(ws.id).not.toBe(stopping.id);
    expect(coder.workspaces().find((w) => w.id === stopping.id)).toMatchObject({ deleted: true, transitions: ['start', 'stop', 'delete'] });
  });

  it('waits and retries when the delete meets "a workspace build is already active"', async () => {
    coder.faults.holdBuilds(true);
    const stuck = coder.seedWorkspace({ name: 'bt-w', status: 'starting', createdAt: old() });
    const creating = provider.create(specFor('bt-w'));
    void creating.catch(() => {}); // awaited below; a failure must not go unhandled meanwhile
    // Let the start finish only once Coder has refused the delete at least once.
    await until(() => builds().some((r) => r.status === 409), 'Coder to refuse the delete while the start is active');
    coder.faults.holdBuilds(false);
    const ws = await creating;
    expect(ws.id).not.toBe(stuck.id);
    expect(builds().some((r) => r.status === 409)).toBe(true);
    expect(coder.workspaces().filter((w) => !w.deleted)).toHaveLength(1);
  });

  it('refuses to touch a workspace of that name that is not baton’s', async () => {
    const other = coder.addTemplate('someone-elses');
    coder.seedWorkspace({ name: 'bt-w', templateId: other.id, status: 'stopped' });
    await expect(provider.create(specFor('bt-w'))).rejects.toThrow(/taken by a workspace baton does not manage/);
    await expect(provider.create(specFor('bt-w'))).rejects.toBeInstanceOf(PermanentError);
    expect(builds()).toHaveLength(0);
  });

  it('fails with a retryable error when the old workspace never goes away', async () => {
    await provider.close?.();
    provider = fastProvider(coder, { waitGoneMs: 60 });
    coder.seedWorkspace({ name: 'bt-w', status: 'deleting', stuck: true });
    const error = await provider.create(specFor('bt-w')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(error).not.toBeInstanceOf(PermanentError);
    expect((error as Error).message).toMatch(/"bt-w" is still taken/);
  });
});

describe('coder provider: get, list, stop, delete', () => {
  it('gets by exact name, never by substring', async () => {
    coder.seedWorkspace({ name: 'bt-app-42' });
    expect(await provider.get('bt-app-4')).toBeNull();
    expect(await provider.get('bt-app-42')).toMatchObject({ name: 'bt-app-42', status: 'running' });
  });

  it('lists only baton’s workspaces (name pattern, template, owner) across pages', async () => {
    for (let i = 0; i < 130; i++) coder.seedWorkspace({ name: `bt-run-${i}` });
    coder.seedWorkspace({ name: 'my-dev-box' });
    coder.seedWorkspace({ name: 'bt-alices', owner: 'alice' });
    coder.seedWorkspace({ name: 'bt-other-template', templateId: coder.addTemplate('other').id });
    const listed = await provider.list();
    expect(listed).toHaveLength(130);
    expect(listed.map((w) => w.name)).not.toContain('my-dev-box');
    const lists = coder.requests.filter((r) => r.path === '/api/v2/workspaces');
    expect(lists.length).toBeGreaterThan(1);
    expect(lists.every((r) => new URLSearchParams(r.query).get('q') === 'owner:me')).toBe(true);
  });

  it('works for a named user instead of me', async () => {
    await provider.close?.();
    provider = fastProvider(coder, { user: 'baton' });
    coder.seedWorkspace({ name: 'bt-alices', owner: 'alice' });
    await provider.create(specFor('bt-mine'));
    expect((await provider.list()).map((w) => w.name)).toEqual(['bt-mine']);
    expect(await provider.get('bt-alices')).toBeNull();
    expect(coder.requests.some((r) => r.path === '/api/v2/users/baton/workspaces')).toBe(true);
    expect(coder.requests.filter((r) => r.path === '/api/v2/workspaces').every((r) => r.query.includes('owner%3Abaton'))).toBe(true);
  });

  it('resolves coder.user given as a user id to its username, once, since owner: takes usernames only', async () => {
    await provider.close?.();
    provider = fastProvider(coder, { user: coder.user.id });
    coder.seedWorkspace({ name: 'bt-alices', owner: 'alice' });
    await provider.create(specFor('bt-mine'));
    expect((await provider.list()).map((w) => w.name)).toEqual(['bt-mine']);
    expect((await provider.list()).map((w) => w.name)).toEqual(['bt-mine']);
    expect(coder.requests.filter((r) => r.path === `/api/v2/users/${coder.user.id}`)).toHaveLength(1);
    const lists = coder.requests.filter((r) => r.path === '/api/v2/workspaces');
    expect(lists.map((r) => new URLSearchParams(r.query).get('q'))).toEqual(['owner:baton', 'owner:baton']);
  });

  it('names coder.user when a user id is unknown to Coder, instead of listing nothing', async () => {
    await provider.close?.();
    const unknown = '0b1d3c5e-0000-4000-8000-000000000000';
    provider = fastProvider(coder, { user: unknown });
    const error = await provider.list().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PermanentError);
    expect((error as Error).message).toBe(`coder.user "${unknown}" is not a user Coder knows (GET /api/v2/users/${unknown})`);
    expect(coder.requests.some((r) => r.path === '/api/v2/workspaces')).toBe(false);
  });

  it('stops and deletes with builds, never an HTTP DELETE, and treats gone as done', async () => {
    await provider.create(specFor('bt-w'));
    await provider.waitUntilRunning('bt-w');
    await provider.stop('bt-w');
    await until(async () => (await provider.get('bt-w'))?.status === 'stopped', 'the workspace to stop');
    await provider.stop('bt-w');
    await provider.delete('bt-w');
    await until(async () => (await provider.get('bt-w')) === null, 'the workspace to be gone');
    await provider.delete('bt-w');
    await provider.stop('bt-w');
    expect(coder.workspaces()[0]?.transitions).toEqual(['start', 'stop', 'delete']);
    expect(coder.requests.some((r) => r.method === 'DELETE')).toBe(false);
    expect(builds().map((r) => (r.body as { transition: string }).transition)).toEqual(['stop', 'delete']);
  });

  it('waits for a pending start before stopping', async () => {
    coder.faults.holdBuilds(true);
    await provider.create(specFor('bt-w'));
    const stopping = provider.stop('bt-w');
    void stopping.catch(() => {}); // awaited below
    // Let the start finish only once Coder has refused the stop while it was active.
    await until(() => builds().some((r) => r.status === 409), 'Coder to refuse the stop while the start is active');
    coder.faults.holdBuilds(false);
    await stopping;
    await until(async () => (await provider.get('bt-w'))?.status === 'stopped', 'the workspace to stop');
  });

  it('reports a failed start build while waiting for it', async () => {
    coder.faults.failNextBuilds(1, 'start');
    await provider.create(specFor('bt-w'));
    await expect(provider.waitUntilRunning('bt-w')).rejects.toThrow(/failed instead of running: terraform apply failed/);
  });
});

describe('coder provider: faults', () => {
  it('retries 5xx answers', async () => {
    coder.faults.failNext(2, { status: 503, match: isCreate });
    await provider.create(specFor('bt-w'));
    expect(creates().map((r) => r.status)).toEqual([503, 503, 201]);
  });

  it('retries a dropped connection', async () => {
    coder.faults.dropNext(1);
    expect(await provider.create(specFor('bt-w'))).toMatchObject({ name: 'bt-w' });
    expect(coder.workspaces()).toHaveLength(1);
  });

  it('adopts its own workspace when the create answer was lost after Coder made it', async () => {
    coder.faults.dropNext(1, { afterHandling: true, match: (r) => r.method === 'POST' });
    // A first attempt, as the dispatcher's spec says (no earlier tokens): identity is checked.
    const ws = await provider.create(specFor('bt-w', { adoptableTokenHashes: [] }));
    expect(coder.workspaces()).toHaveLength(1);
    expect(ws.id).toBe(coder.workspaces()[0]?.id);
    expect(coder.requests.filter((r) => !r.path.startsWith('/api/v2/template')).map((r) => `${r.status} ${r.method} ${r.path}`)).toEqual([
      'dropped POST /api/v2/users/me/workspaces',
      '409 POST /api/v2/users/me/workspaces',
      '200 GET /api/v2/users/me/workspace/bt-w',
      // Its own: the build carries the hash of this create's token.
      `200 GET /api/v2/workspacebuilds/${coder.workspace('bt-w')?.buildId}/parameters`,
    ]);
  });

  it('times a slow call out and retries it', async () => {
    await provider.close?.();
    // The first call is held until the test lets it go: it times out whatever the machine's load,
    // and the retry (answered at once) has a whole second, which a loaded CI machine needs.
    provider = fastProvider(coder, { timeoutMs: 1_000 });
    const held = coder.faults.pauseNext();
    try {
      expect(await provider.list()).toEqual([]);
      expect(coder.requests).toHaveLength(2);
    } finally {
      held.release();
    }
  });

  it('gives up after its retries with an error naming the call, not the token', async () => {
    await provider.close?.();
    provider = fastProvider(coder, { timeoutMs: 30, retries: 1 });
    coder.faults.latencyMs = 100;
    const error = await provider.list().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CoderUnavailableError);
    expect((error as Error).message).toMatch(/GET \/api\/v2\/workspaces failed: no answer within 30 ms \(after 2 attempts\)/);
    coder.faults.latencyMs = 0;
    coder.faults.failNext(5, { status: 500 });
    const again = await provider.list().catch((e: unknown) => e);
    expect(again).toBeInstanceOf(CoderUnavailableError);
    expect(again).not.toBeInstanceOf(PermanentError);
  });

  it('turns 401 into a permanent error with a clear reason and reports the provider unhealthy', async () => {
    await provider.close?.();
    provider = fastProvider(coder, { token: 'not-the-right-token' });
    const error = await provider.create(specFor('bt-w')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PermanentError);
    // The first call is the template's parameters, before the create.
    expect((error as Error).message).toMatch(
      /Coder rejected the session token \(check CODER_TOKEN\): HTTP 401 on GET \/api\/v2\/templates\//,
    );
    expect((error as Error).message).not.toContain('not-the-right-token');
    expect(provider.health()).toEqual({ ok: false, reason: expect.stringMatching(/^coder provider: Coder rejected the session token/) });
    expect(coder.requests).toHaveLength(1);
  });

  it('recovers its health once Coder accepts a request again, and treats 403 as permanent', async () => {
    coder.faults.failNext(1, { status: 403, match: isCreate, body: { message: 'Unauthorized access to use the template.' } });
    const error = await provider.create(specFor('bt-w')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PermanentError);
    expect((error as Error).message).toContain('Unauthorized access to use the template.');
    expect(provider.health().ok).toBe(false);
    await provider.list();
    expect(provider.health()).toEqual({ ok: true });
  });

  it('surfaces Coder’s 400 message and validations, with secrets redacted', async () => {
    coder.faults.failNext(1, {
      status: 400,
      match: isCreate,
      body: {
        message: 'Validation failed.',
        validations: [{ field: 'rich_parameter_values', detail: 'parameter "gitea_token" rejected value "forge-dev-bot-secret"' }],
      },
    });
    const error = await provider.create(specFor('bt-w')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PermanentError);
    const message = (error as Error).message;
    expect(message).toContain('HTTP 400 on POST /api/v2/users/me/workspaces: Validation failed.');
    expect(message).toContain('[rich_parameter_values: parameter "gitea_token" rejected value "[redacted]"]');
    expect(message).not.toContain('forge-dev-bot-secret');
  });

  it('surfaces an unknown template as a permanent validation error', async () => {
    await provider.close?.();
    provider = fastProvider(coder, { templateId: '11111111-1111-1111-1111-111111111111' });
    await expect(provider.create(specFor('bt-w'))).rejects.toThrow(
      /Template "11111111-1111-1111-1111-111111111111" doesn't exist\. \[template_id: template not found\]/,
    );
  });

  it('does not retry other 4xx answers', async () => {
    coder.faults.failNext(1, {
      status: 404,
      match: isCreate,
      body: { message: 'Resource not found or you do not have access to this resource' },
    });
    await expect(provider.create(specFor('bt-w'))).rejects.toBeInstanceOf(CoderApiError);
    expect(creates()).toHaveLength(1);
  });
});
