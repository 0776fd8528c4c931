import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runBaton, startServe, type ServeHandle } from '../helpers/baton-bin.js';

describe('the built baton bin: tokens and operator commands', () => {
  let cwd: string;
  let server: ServeHandle | undefined;

  beforeEach(() => {
    cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-e2e-ops-'));
  });
  afterEach(async () => {
    await server?.stop('SIGKILL');
    server = undefined;
    fs.rmSync(cwd, { recursive: true, force: true });
  });

  it('mints a token on the database, uses it over HTTP with runs and queue, and revokes it', async () => {
    const created = await runBaton(['token', 'create', '--name', 'ops'], { cwd });
    expect(created.code).toBe(0);
    const token = created.stdout.trim();
    expect(token).toMatch(/^baton_/);
    expect(created.stderr).toMatch(/shown only now/);

    server = await startServe({}, cwd);
    const env = { BATON_URL: server.url, BATON_TOKEN: token };
    const stats = await runBaton(['queue', 'stats', '--json'], { cwd, env });
    expect(stats.code).toBe(0);
    expect(JSON.parse(stats.stdout)).toMatchObject({ queued: 0, paused: false });
    const ls = await runBaton(['runs', 'ls'], { cwd, env });
    expect(ls.stdout.trim()).toBe('no runs');
    const missing = await runBaton(['runs', 'show', '42'], { cwd, env });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/run 42 does not exist/);
    const usage = await runBaton(['runs', 'frob'], { cwd, env });
    expect(usage.code).toBe(2);

    const list = await runBaton(['token', 'list'], { cwd });
    // Minted without --scope: read only, which is all these commands need.
    expect(list.stdout).toMatch(/ops\s+read\s+baton_/);
    expect(list.stdout).not.toContain(token);
    expect((await runBaton(['token', 'revoke', 'ops'], { cwd })).code).toBe(0);
    const refused = await runBaton(['queue', 'stats'], { cwd, env });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/BATON_TOKEN was rejected/);
    // The token exists in clear only in the create command's output.
    expect(server.output()).not.toContain(token);
  });
});
