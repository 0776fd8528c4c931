import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createFakeGitea, type FakeGitea } from '../fakes/gitea/index.js';
import { bearer, startTestApp, type TestApp } from '../helpers/app.js';
import { STORE_KINDS, type TestStore } from '../helpers/stores.js';
import { until } from '../helpers/until.js';

const available = Object.fromEntries(await Promise.all(STORE_KINDS.map(async (k) => [k.kind, await k.available()])));

const BATON_YAML = `
webhooks:
  allow: ["acme/*"]
# Manual submissions are for repositories baton knows.
catchup:
  repositories: [acme/app]
budgets:
  timezone: Europe/Berlin
  tokensPerDay: 1000
  stages:
    develop: { costUsdPerDay: 5 }
`;

describe.each(STORE_KINDS)('budgets through the API, comments and metrics on $kind', ({ kind, create }) => {
  let t: TestStore;
  let gitea: FakeGitea;
  let server: TestApp;

  beforeEach(async (ctx) => {
    if (!available[kind]) ctx.skip();
    t = await create();
    gitea = await createFakeGitea();
    const dev = gitea.addUser('claude-dev').token;
    const review = gitea.addUser('claude-review').token;
    gitea.addUser('alice');
    gitea.addRepo('acme', 'app');
    for (const bot of ['claude-dev', 'claude-review']) gitea.addCollaborator('acme', 'app', bot, 'write');
    for (let i = 0; i < 3; i++) gitea.addIssue('acme', 'app', { title: `issue ${i + 1}`, author: 'alice' });
    server = await startTestApp(t, {
      file: BATON_YAML,
      env: { GITEA_URL: gitea.url, GITEA_DEV_TOKEN: dev, GITEA_REVIEW_TOKEN: review },
    });
  });
  afterEach(async () => {
    await server?.close();
    await gitea?.close();
    await t?.cleanup();
  });

  const api = async (method: string, path: string, body?: unknown, token?: string) =>
    fetch(`${server.url}${path}`, {
      method,
      headers: { ...bearer(token), 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const submit = async (number: number) => {
    const res = await api('POST', '/api/runs', { stage: 'develop', repository: 'acme/app', number });
    expect(res.status, await res.clone().text()).toBe(201);
    return ((await res.json()) as { run: { id: number } }).run.id;
  };
  const statusOf = async (id: number) => (await server.app.runs.get(id))!.status;
  const bodies = (number: number) => gitea.comments('acme', 'app', number).map((c) => c.body);

  it('holds a run once spent, says so once on the issue, shows it everywhere, and an admin raise starts it', async () => {
    const spender = await submit(1);
    await until(async () => (await statusOf(spender)) === 'running', 'the first run to start');
    await server.app.engine.complete(spender, { status: 'succeeded', usage: { inputTokens: 700, outputTokens: 400 }, costUsd: 1.5 });

    const waiting = await submit(2);
    await until(async () => (await statusOf(waiting)) === 'held', 'the second run to be held');
    await until(() => bodies(2).some((b) => b.includes('on hold')), 'the hold comment');
    const held = bodies(2).filter((b) => b.includes('on hold'));
    expect(held).toHaveLength(1);
    expect(held[0]).toContain('A daily budget for agent runs is spent');
    // The issue may be public: neither amounts nor scope names reach it.
    expect(held[0]).not.toMatch(/1,100|tokens|global/);

    const run = (await (await api('GET', `/api/runs/${waiting}`)).json()) as { run: { status: string; heldReason: string } };
    expect(run.run).toMatchObject({
      status: 'held',
      heldReason: expect.stringMatching(/global daily budget is spent \(1,100 of 1,000 tokens/),
    });

    const overview = (await (await api('GET', '/api/budgets')).json()) as Record<string, unknown>;
    expect(overview).toMatchObject({
      timezone: 'Europe/Berlin',
      held: 1,
      budgets: [
        { scope: 'global', tokens: { limit: 1000, used: 1100, remaining: 0 }, costUsd: null, exhausted: true, held: 1 },
        { scope: 'stage:develop', tokens: null, costUsd: { limit: 5, used: 1.5, remaining: 3.5 }, exhausted: false, held: 0 },
      ],
    });

    const metrics = await (await api('GET', '/metrics')).text();
    expect(metrics).toMatch(/^baton_runs_held 1$/m);
    expect(metrics).toMatch(/^baton_budget_remaining\{scope="global",unit="tokens"\} 0$/m);
    expect(metrics).toMatch(/^baton_budget_remaining\{scope="stage:develop",unit="usd"\} 3\.5$/m);

    // Raising needs admin; bad bodies are refused naming the field; only configured scopes.
    const operator = await server.app.tokens.create('ops', 'operate');
    expect((await api('PUT', '/api/budgets', { scope: 'global', tokens: 5000 }, operator.token)).status).toBe(403);
    const bad = [
      [{ scope: 'global' }, /tokens or costUsd is required/],
      [{ scope: 'global', tokens: -1 }, /tokens must be a whole number > 0, got -1/],
      [{ scope: 'global', costUsd: 'lots' }, /costUsd must be a number > 0/],
      [{ scope: 'everything', tokens: 5 }, /scope is required/],
      [{ scope: 'global', tokens: 5, extra: 1 }, /unknown field "extra"/],
    ] as const;
    for (const [body, message] of bad) {
      const res = await api('PUT', '/api/budgets', body);
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(message);
    }
    const unknown = await api('POST', '/api/budgets', { scope: 'repository:acme/app', tokens: 5 });
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { message: string } }).error.message).toMatch(/configured: global, stage:develop/);
    expect(await statusOf(waiting)).toBe('held');

    const raised = await api('PUT', '/api/budgets', { scope: 'global', tokens: 5000 });
    expect(raised.status).toBe(200);
    expect(((await raised.json()) as { budgets: unknown[] }).budgets[0]).toMatchObject({
      scope: 'global',
      tokens: { limit: 5000, used: 1100, remaining: 3900 },
      raised: true,
      exhausted: false,
    });
    await until(async () => (await statusOf(waiting)) === 'running', 'the held run to start after the raise');
    await until(() => bodies(2).some((b) => b.includes('started')), 'the started comment');
    expect(bodies(2).filter((b) => b.includes('on hold'))).toHaveLength(1);
  });
});
