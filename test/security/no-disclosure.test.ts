import fs from 'node:fs';
import { Writable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { errorMessage } from '../../src/background/index.js';
import { createLogger } from '../../src/log/index.js';
import { createMemoryProvider, type MemoryProvider } from '../../src/workspaces/index.js';
import { createFakeGitea, type FakeGitea } from '../fakes/gitea/index.js';
import { bearer, startTestApp, type TestApp } from '../helpers/app.js';
import { runBaton } from '../helpers/baton-bin.js';
import { createSqliteTestStore, type TestStore } from '../helpers/stores.js';
import { until } from '../helpers/until.js';

/**
 * What baton used to tell whoever asked: `/ready` gave database error text to anyone; a
 * mistyped DATABASE_URL scheme printed its password; status comments on possibly public issues
 * carried provisioning errors, the bare code `no_result` of a crashed agent and the operator's
 * token name.
 */

describe('no disclosure', () => {
  let t: TestStore;
  let server: TestApp;
  let gitea: FakeGitea;
  let provider: MemoryProvider;

  beforeEach(async () => {
    t = await createSqliteTestStore();
    gitea = await createFakeGitea();
    const dev = gitea.addUser('claude-dev').token;
    const review = gitea.addUser('claude-review').token;
    gitea.addUser('alice');
    gitea.addRepo('acme', 'app');
    gitea.addCollaborator('acme', 'app', 'claude-dev', 'write');
    for (let i = 0; i < 3; i++) gitea.addIssue('acme', 'app', { title: `issue ${i + 1}`, author: 'alice' });
    provider = createMemoryProvider();
    server = await startTestApp(t, {
      env: { GITEA_URL: gitea.url, GITEA_DEV_TOKEN: dev, GITEA_REVIEW_TOKEN: review },
      file: 'queue: { maxAttempts: 1 }\n',
      deps: { provider },
    });
  });
  afterEach(async () => {
    await server?.close();
    await gitea?.close();
    await t?.cleanup();
  });

  const comments = (number: number) =>
    gitea.comments('acme', 'app', number).map((c) => c.body.replace(/\n\n<!-- baton:outbox:\d+ -->$/, ''));

  it('names failing readiness checks to anyone, and says why only to a token', async () => {
    // A data directory that cannot be written: the reason names the path.
    fs.rmSync(server.dataDir, { recursive: true });
    fs.writeFileSync(server.dataDir, 'not a directory');
    const anonymous = await fetch(`${server.url}/ready`);
    expect(anonymous.status).toBe(503);
    const open = await anonymous.text();
    // The webhook spool lives in the data directory: it cannot be written either.
    expect(JSON.parse(open)).toEqual({ ready: false, failing: ['data directory', 'spool'] });
    expect(open).not.toContain(server.dataDir);

    const { token } = await server.app.tokens.create('monitor', 'read');
    const detailed = (await (await fetch(`${server.url}/ready`, { headers: bearer(token) })).json()) as {
      checks: Array<{ name: string; ok: boolean; error?: string }>;
    };
    expect(detailed.checks.find((c) => c.name === 'data directory')).toEqual({
      name: 'data directory',
      ok: false,
      error: `${server.dataDir} is not writable (ENOTDIR)`,
    });
    // A wrong token is anyone.
    expect(await (await fetch(`${server.url}/ready`, { headers: bearer('baton_wrong') })).json()).toEqual({
      ready: false,
      failing: ['data directory', 'spool'],
    });
    fs.rmSync(server.dataDir, { force: true });
    fs.mkdirSync(server.dataDir);
  });

  it('says why a run failed in general terms on the issue, with the run id, and keeps the details in the API', async () => {
    const { run: crashed } = await server.app.engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 1 });
    await until(async () => (await server.app.runs.get(crashed.id))?.status === 'running', 'the run to be running');
    const spec = provider.created.find((s) => s.runId === crashed.id)!;
    // The runner of a crashed agent reports the machine-readable reason and its own words.
    const done = await fetch(`${server.url}/api/runs/${crashed.id}/complete`, {
      method: 'POST',
      headers: { ...bearer(spec.callbackToken), 'content-type': 'application/json' },
      body: JSON.stringify({
        status: 'failed',
        error: 'no_result',
        summary: 'claude exited with code 1 in /workspace/app',
        exitCode: 1,
        durationMs: 4200,
      }),
    });
    expect(done.status).toBe(200);
    await until(() => comments(1).length === 3, 'the final comment on issue 1');
    expect(comments(1)[2]).toBe(
      `❌ **develop** failed after 4s · run ${crashed.id}\n\n` +
        `The agent stopped without reporting a result (it may have crashed). The details are in baton under run ${crashed.id}.`,
    );
    expect(comments(1).join('\n')).not.toContain('no_result');
    expect(comments(1).join('\n')).not.toContain('/workspace');
    const details = (await (await fetch(`${server.url}/api/runs/${crashed.id}`, { headers: bearer() })).json()) as {
      run: { lastError: string };
    };
    expect(details.run.lastError).toBe('no_result');

    // The operator's token name stays out of the comment.
    await server.app.engine.pause();
    const { run: cancelled } = await server.app.engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 2 });
    expect((await fetch(`${server.url}/api/runs/${cancelled.id}/cancel`, { method: 'POST', headers: bearer() })).status).toBe(200);
    await until(() => comments(2).length === 2, 'the cancel comment on issue 2');
    expect(comments(2)[1]).toBe(`🛑 **develop** was cancelled · run ${cancelled.id}`);
    expect(comments(2).join('\n')).not.toContain('admin');

    // A provisioning error (the provider's words, a host, a credential in a URL) stays in baton.
    provider.failNextCreates(1, new Error('coder 400: template 5f1c not found at https://bot:hunter2@coder.internal/api'));
    const { run: dead } = await server.app.engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 3 });
    await server.app.engine.resume();
    await until(() => comments(3).length === 2, 'the final comment on issue 3');
    expect(comments(3)[1]).toBe(
      `💀 **develop** could not start after 1 attempts · run ${dead.id}\n\nThe workspace could not be started. The details are in baton under run ${dead.id}.`,
    );
    // In the API the reason is there, with the credential of its URL masked.
    expect((await server.app.runs.get(dead.id))?.lastError).toBe(
      'coder 400: template 5f1c not found at https://bot:********@coder.internal/api',
    );
  });

  it('masks the password of a mistyped DATABASE_URL scheme', async () => {
    const result = await runBaton(['serve'], {
      env: { DATABASE_URL: 'postgress://baton:hunter2-db@db.internal/baton', BATON_DATA_DIR: server.dataDir },
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('postgress://baton:********@db.internal/baton');
    expect(result.stdout + result.stderr).not.toContain('hunter2');
  });

  it('masks credentials in URLs on every log line and in every error text', () => {
    const lines: string[] = [];
    const logger = createLogger({
      level: 'info',
      pretty: false,
      destination: new Writable({
        write(chunk, _encoding, done) {
          lines.push(String(chunk));
          done();
        },
      }),
    });
    const err = new Error('GET https://bot:forge-pass@git.internal/api/v1/repos failed');
    logger.warn(
      { err, cloneUrl: 'https://x-access:clone-pass@git.internal/acme/app.git', mail: 'alice@example.com' },
      'via postgres://baton:db-pass@db/baton',
    );
    const line = lines.join('');
    for (const secret of ['forge-pass', 'clone-pass', 'db-pass']) expect(line).not.toContain(secret);
    // Still one JSON object, every field kept.
    const parsed = JSON.parse(line) as Record<string, unknown>;
    expect(parsed).toMatchObject({ mail: 'alice@example.com', msg: 'via postgres://baton:********@db/baton' });
    expect(parsed.cloneUrl).toBe('https://x-access:********@git.internal/acme/app.git');
    expect(errorMessage(err)).toBe('GET https://bot:********@git.internal/api/v1/repos failed');
  });
});
