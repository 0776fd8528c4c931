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
    // The database comes first (baton migrate, or baton serve): token commands never make one.
    expect((await runBaton(['migrate'], { cwd })).code).toBe(0);
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

  it('refuses to make a database for a token command run in the wrong directory, naming where it looked', async () => {
    const where = path.join(fs.realpathSync(cwd), 'data', 'baton.db');
    for (const args of [
      ['token', 'list'],
      ['token', 'create', '--name', 'ops'],
      ['token', 'revoke', 'ops'],
    ]) {
      const result = await runBaton(args, { cwd });
      expect(result.code, args.join(' ')).toBe(1);
      expect(result.stdout).toBe('');
      expect(result.stderr).toContain(`no baton database at ${where}`);
      expect(result.stderr).toMatch(/only baton serve and baton migrate create a database/);
    }
    expect(fs.existsSync(path.join(cwd, 'data'))).toBe(false);

    // Pointed at the server's database, the same command works, and a token minted there is the server's.
    server = await startServe({}, cwd);
    const elsewhere = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-e2e-elsewhere-'));
    try {
      const created = await runBaton(['token', 'create', '--name', 'ops'], { cwd: elsewhere, env: { DATABASE_URL: `sqlite:${where}` } });
      expect(created.code, created.stderr).toBe(0);
      const stats = await runBaton(['queue', 'stats'], {
        cwd: elsewhere,
        env: { BATON_URL: server.url, BATON_TOKEN: created.stdout.trim() },
      });
      expect(stats.code, stats.stderr).toBe(0);
      expect(fs.existsSync(path.join(elsewhere, 'data'))).toBe(false);
    } finally {
      fs.rmSync(elsewhere, { recursive: true, force: true });
    }
  });
});
