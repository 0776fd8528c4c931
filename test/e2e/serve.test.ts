import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { runBaton, startServe, type ServeHandle } from '../helpers/baton-bin.js';
import { until } from '../helpers/until.js';

describe('the baton CLI', () => {
  let cwd: string;
  let server: ServeHandle | undefined;

  beforeEach(() => {
    cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-e2e-'));
  });
  afterEach(async () => {
    await server?.stop('SIGKILL');
    server = undefined;
    fs.rmSync(cwd, { recursive: true, force: true });
  });

  it('prints help and its version', async () => {
    const help = await runBaton(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/serve\s+Start the orchestrator/);
    const version = await runBaton(['--version']);
    // The version users name: package.json's, which the release workflow checks against the tag.
    const { version: released } = JSON.parse(fs.readFileSync(path.join(import.meta.dirname, '../../package.json'), 'utf8')) as {
      version: string;
    };
    expect(version.stdout).toBe(`${released}\n`);
    expect(released).toMatch(/^\d+\.\d+\.\d+$/);
    const unknown = await runBaton(['frobnicate']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/unknown command "frobnicate"/);
  });

  it('refuses to start on an invalid configuration, listing every problem, before listening', async () => {
    const result = await runBaton(['serve'], { cwd, env: { QUEUE_CONCURRENCY: 'abc', WORKSPACE_PROVIDER: 'kubernetes', PORT: '1' } });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('QUEUE_CONCURRENCY must be a whole number >= 1, got "abc"');
    expect(result.stderr).toContain('WORKSPACE_PROVIDER must be one of local, coder, got "kubernetes"');
    expect(fs.existsSync(path.join(cwd, 'data'))).toBe(false);
  });

  it('checks the configuration with secrets masked', async () => {
    const result = await runBaton(['config', 'check'], {
      cwd,
      env: {
        GITEA_URL: 'https://git.example',
        GITEA_DEV_TOKEN: 'sekret-dev-token',
        GITEA_REVIEW_TOKEN: 'sekret-review',
        REDIS_URL: 'redis://old',
      },
    });
    expect(result.code).toBe(0);
    expect(result.stdout).not.toMatch(/sekret/);
    expect(YAML.parse(result.stdout)).toMatchObject({ gitea: { url: 'https://git.example' }, bots: { dev: { token: '********' } } });
    expect(result.stderr).toMatch(/REDIS_URL is set but baton no longer uses Redis/);
  });

  it('migrates a fresh SQLite database and reports it up to date afterwards', async () => {
    const env = { DATABASE_URL: 'sqlite:./state/baton.db' };
    const first = await runBaton(['migrate'], { cwd, env });
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/applied: 0001-core/);
    expect(fs.existsSync(path.join(cwd, 'state/baton.db'))).toBe(true);
    const second = await runBaton(['migrate'], { cwd, env });
    expect(second.stdout).toMatch(/up to date/);
  });

  it('serves on the embedded default and shuts down gracefully on SIGTERM with exit code 0', async () => {
    // Runs are sandboxed as nobody when this suite runs as root: it must reach ./data/workspaces.
    fs.chmodSync(cwd, 0o711);
    server = await startServe({}, cwd);
    // First start without a terminal (output is piped, as a container runtime does): the admin
    // token goes to a 0600 file in the data directory, whose path is logged; /queue needs it.
    const tokenFile = path.join(cwd, 'data/first-admin-token');
    await until(() => server!.output().includes(tokenFile), 'the log line naming the token file');
    const token = fs.readFileSync(tokenFile, 'utf8').trim();
    expect(token).toMatch(/^baton_/);
    expect(server.output()).not.toContain(token);
    // Ready once the local provider has checked its sandbox and found claude (node_modules/.bin
    // is on the PATH of npm test, as of npm start). The reasons are for a token's eyes.
    const ready = await until(async () => {
      const res = await fetch(`${server!.url}/ready`, { headers: { authorization: `Bearer ${token}` } });
      const body = (await res.json()) as { checks: { name: string; error?: string }[] };
      return body.checks.some((c) => c.error?.includes('checking the sandbox')) ? null : { status: res.status, body };
    }, 'the local provider check');
    expect(ready.status, JSON.stringify(ready.body)).toBe(200);
    expect(fs.existsSync(path.join(cwd, 'data/baton.db'))).toBe(true);
    expect((await fetch(`${server.url}/queue`)).status).toBe(401);
    const queue = await (await fetch(`${server.url}/queue`, { headers: { authorization: `Bearer ${token}` } })).json();
    expect(queue).toMatchObject({ pending: 0, active: 0, activeWorkspaces: {}, concurrency: 2, paused: false, dead: 0 });
    expect(await server.stop('SIGTERM')).toBe(0);
    expect(server.output()).toMatch(/"msg":"stopped"/);
  });
});
