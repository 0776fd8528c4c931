import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ApiError } from '../../src/cli/api-client.js';
import { UsageError } from '../../src/cli/args.js';
import type { CommandIo } from '../../src/cli/index.js';
import { runCommand } from '../../src/cli/run-command.js';
import { ADMIN_TOKEN, startTestApp, type TestApp } from '../helpers/app.js';
import { createSqliteTestStore, type TestStore } from '../helpers/stores.js';
import { until } from '../helpers/until.js';

describe('baton run', () => {
  let t: TestStore;
  let server: TestApp;
  let stdout: string[];
  let stderr: string[];
  let io: CommandIo;

  beforeEach(async () => {
    t = await createSqliteTestStore();
    server = await startTestApp(t, { env: { GITEA_URL: 'https://git.example.com', GITEA_DEV_TOKEN: 'd', GITEA_REVIEW_TOKEN: 'r' } });
    // acme/app is one baton knows: a signed delivery from its webhook reached it once.
    await t.store.db.insertInto('known_repositories').values({ repository: 'acme/app', first_seen_at: 0 }).execute();
    stdout = [];
    stderr = [];
    io = { out: (x) => stdout.push(x), err: (x) => stderr.push(x), env: { BATON_URL: server.url, BATON_TOKEN: ADMIN_TOKEN } };
  });
  afterEach(async () => {
    await server.close();
    await t.cleanup();
  });

  it('queues a run and says how to follow it; --arg words make up the arguments', async () => {
    await server.app.engine.pause();
    expect(
      await runCommand(
        ['develop', '--repo', 'acme/app', '--issue', '7', '--arg', 'only', '--arg', 'the parser', '--ref', 'fix/parser'],
        io,
      ),
    ).toBe(0);
    expect(stdout).toEqual(['run #1 queued: develop acme/app#7', 'follow it with: baton logs 1 --follow']);
    expect((await server.app.runs.get(1))?.payload).toMatchObject({ arguments: 'only the parser', ref: 'fix/parser' });
    stdout.length = 0;
    expect(await runCommand(['develop', '--repo', 'acme/app', '--issue', '7', '--json'], io)).toBe(0);
    expect(JSON.parse(stdout.join('\n'))).toMatchObject({ outcome: 'coalesced', run: { id: 1 } });
  });

  it('follows the run until it ends and exits 1 when it failed', async () => {
    const { engine, runs } = server.app;
    const following = runCommand(['develop', '--repo', 'acme/app', '--issue', '8', '--follow'], io);
    const run = await until(async () => (await runs.list()).find((r) => r.status === 'running'), 'the run to start');
    await engine.appendEvent(run.id, 'run:progress', { lines: ['working on it'] });
    await until(() => stdout.includes('working on it'), 'the log line to be printed');
    await engine.complete(run.id, { status: 'failed', error: 'tests failed' });
    expect(await following).toBe(1);
    expect(stderr.join('\n')).toMatch(/run #\d+ failed: tests failed/);
  });

  it('refuses a bad command line before calling the API, and reports the API’s refusal', async () => {
    await expect(runCommand(['develop'], io)).rejects.toThrow(UsageError);
    await expect(runCommand(['develop', '--repo', 'acme/app', '--issue', 'seven'], io)).rejects.toThrow(
      /--issue must be a positive whole number/,
    );
    await expect(runCommand(['develop', '--repo', 'acme/app', '--colour', 'red'], io)).rejects.toThrow(UsageError);
    const refused = await runCommand(['deploy-all', '--repo', 'acme/app'], io).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ApiError);
    expect((refused as Error).message).toMatch(/stage "deploy-all" does not exist/);
    const unknown = await runCommand(['develop', '--repo', 'acme/elsewhere'], io).catch((e: unknown) => e);
    expect((unknown as Error).message).toMatch(/acme\/elsewhere is not one baton knows/);
    expect(await server.app.runs.list()).toEqual([]);
  });
});
