import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBareRepo } from '../fakes/agent/git-repos.js';
import { ADMIN_TOKEN, bearer, startTestApp, type TestApp } from '../helpers/app.js';
import { runBaton } from '../helpers/baton-bin.js';
import { createSqliteTestStore, type TestStore } from '../helpers/stores.js';
import { until } from '../helpers/until.js';

const batonYaml = (repository: string) => `
budgets:
  tokensPerDay: 1000
  stages:
    develop: { costUsdPerDay: 5 }
repositories:
  acme/app: { path: ${JSON.stringify(repository)} }
`;

describe('baton budgets, the built bin over the API', () => {
  let t: TestStore;
  let server: TestApp;
  let env: Record<string, string>;
  let repos: string;

  beforeAll(async () => {
    t = await createSqliteTestStore();
    repos = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-budgets-cli-'));
    server = await startTestApp(t, { file: batonYaml(createBareRepo(repos, 'app')) });
    env = { BATON_URL: server.url, BATON_TOKEN: ADMIN_TOKEN };
  });
  afterAll(async () => {
    await server?.close();
    await t?.cleanup();
    fs.rmSync(repos, { recursive: true, force: true });
  });

  const submit = async (number: number) => {
    const res = await fetch(`${server.url}/api/runs`, {
      method: 'POST',
      headers: { ...bearer(), 'content-type': 'application/json' },
      body: JSON.stringify({ stage: 'develop', repository: 'acme/app', number }),
    });
    expect(res.status, await res.clone().text()).toBe(201);
    return ((await res.json()) as { run: { id: number } }).run.id;
  };

  it('shows what is spent and held, and a raise with an admin token starts the held run', async () => {
    const spender = await submit(1);
    await until(async () => (await server.app.runs.get(spender))?.status === 'running', 'the first run to start');
    await server.app.engine.complete(spender, { status: 'succeeded', usage: { inputTokens: 800, outputTokens: 400 }, costUsd: 1.5 });
    const waiting = await submit(2);
    await until(async () => (await server.app.runs.get(waiting))?.status === 'held', 'the second run to be held');

    const [plain, listed, json] = await Promise.all([
      runBaton(['budgets'], { env }),
      runBaton(['budgets', 'ls'], { env }),
      runBaton(['budgets', 'ls', '--json'], { env }),
    ]);
    expect(plain.code, plain.stderr).toBe(0);
    expect(listed.stdout).toBe(plain.stdout);
    const lines = plain.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^\d{4}-\d{2}-\d{2} \(UTC\), resets .* UTC; runs held: 1$/);
    expect(lines.find((l) => l.startsWith('global'))).toMatch(/^global\s+1,200 of 1,000 \(0 left\)\s+-\s+spent\s+1$/);
    expect(lines.find((l) => l.startsWith('stage:develop'))).toMatch(/\$1\.50 of \$5\.00 \(\$3\.50 left\)\s+open\s+0$/);
    expect((JSON.parse(json.stdout) as { held: number }).held).toBe(1);

    // Bad command lines are refused before any request, naming what is wrong.
    const bad = await Promise.all([
      runBaton(['budgets', 'set', 'everything', '--tokens', '5'], { env }),
      runBaton(['budgets', 'set', 'global', '--tokens', '1.5'], { env }),
      runBaton(['budgets', 'set', 'global'], { env }),
    ]);
    expect(bad.map((r) => r.code)).toEqual([2, 2, 2]);
    expect(bad[0]!.stderr).toContain('SCOPE must be global, repository:OWNER/REPO or stage:NAME, got "everything"');
    expect(bad[1]!.stderr).toContain('--tokens must be a whole number > 0, got "1.5"');
    expect(bad[2]!.stderr).toContain('give --tokens, --cost-usd or both');
    // A scope without a configured budget is the server's 404, said as such.
    const unknown = await runBaton(['budgets', 'set', 'repository:acme/app', '--tokens', '5'], { env });
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no budget is configured for scope "repository:acme/app"');

    const raised = await runBaton(['budgets', 'set', 'global', '--tokens', '5000'], { env });
    expect(raised.code, raised.stderr).toBe(0);
    expect(raised.stdout).toMatch(/global\s+1,200 of 5,000 \(3,800 left\)\s+-\s+open, raised today/);
    await until(async () => (await server.app.runs.get(waiting))?.status !== 'held', 'the held run to be released');
  });
});
