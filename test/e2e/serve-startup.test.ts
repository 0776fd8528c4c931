import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runBaton, startServe, type ServeHandle } from '../helpers/baton-bin.js';
import { PG_URL, postgresAvailable } from '../helpers/stores.js';
import { createTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { until } from '../helpers/until.js';

const available = await postgresAvailable();

/** The JSON log lines of `baton serve` (LOG_LEVEL=info, not a terminal). */
function logLines(output: string): Array<{ level: number; msg: string; [key: string]: unknown }> {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { level: number; msg: string });
}

/** A stack trace in the output: a frame line, or a pino-serialised `stack` field. */
const STACK = /^\s+at |"stack":/m;

describe.skipIf(!available)('baton serve start-up and shutdown against PostgreSQL', () => {
  let cwd: string;
  let proxy: TcpProxy | undefined;
  let server: ServeHandle | undefined;

  beforeEach(() => {
    cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-startup-'));
  });
  afterEach(async () => {
    await server?.stop('SIGKILL');
    server = undefined;
    await proxy?.close();
    proxy = undefined;
    fs.rmSync(cwd, { recursive: true, force: true });
  });

  /** PG_URL with its host and port replaced by a proxy the test has cut: nothing answers. */
  async function unreachableDatabase(): Promise<string> {
    const target = new URL(PG_URL);
    proxy = await createTcpProxy(Number(target.port || 5432), target.hostname);
    proxy.cut();
    target.host = `127.0.0.1:${proxy.port}`;
    return target.toString();
  }

  it.each(['SIGTERM', 'SIGINT'] as const)(
    'stops on %s while start-up is still retrying an unreachable database, one line per attempt',
    async (signal) => {
      server = await startServe({ DATABASE_URL: await unreachableDatabase() }, cwd);
      const retries = () => logLines(server!.output()).filter((l) => l.msg === 'database not reachable; retrying');
      await until(() => retries().length >= 2, 'two retry lines');
      const ready = await fetch(`${server.url}/ready`);
      expect(ready.status).toBe(503);
      expect(await ready.json()).toMatchObject({ failing: expect.arrayContaining(['database', 'migrations']) });

      expect(await server.stop(signal)).toBe(0);
      const lines = logLines(server.output());
      expect(lines.map((l) => l.msg)).toContain('stopped');
      expect(lines.map((l) => l.msg)).not.toContain('baton started');
      for (const [i, line] of retries().entries()) {
        expect(line).toMatchObject({ attempt: i + 1, retryInMs: expect.any(Number), error: expect.any(String) });
      }
      expect(server.output()).not.toMatch(STACK);
    },
  );

  it('refuses to start, with one line and exit code 1, when the database does not exist', async () => {
    const url = new URL(PG_URL);
    url.pathname = `/baton_missing_${process.pid}`;
    const result = await runBaton(['serve'], { cwd, env: { DATABASE_URL: url.toString(), PORT: '0', LOG_LEVEL: 'info' } });
    expect(result.code).toBe(1);
    const output = result.stdout + result.stderr;
    const fatal = logLines(output).filter((l) => l.level === 60);
    expect(fatal).toHaveLength(1);
    expect(fatal[0]!.msg).toBe(
      `cannot start: the database refused baton: database "baton_missing_${process.pid}" does not exist (3D000); check DATABASE_URL`,
    );
    expect(fatal[0]!.code).toBe('3D000');
    expect(logLines(output).map((l) => l.msg)).not.toContain('database not reachable; retrying');
    expect(output).not.toMatch(STACK);
  });

  it('refuses to start, with one line and exit code 1, when the login is refused', async () => {
    const url = new URL(PG_URL);
    url.username = `nobody_${process.pid}`;
    const result = await runBaton(['serve'], { cwd, env: { DATABASE_URL: url.toString(), PORT: '0', LOG_LEVEL: 'info' } });
    expect(result.code).toBe(1);
    const fatal = logLines(result.stdout + result.stderr).filter((l) => l.level === 60);
    expect(fatal).toHaveLength(1);
    // Class 28: a role that does not exist (28000) or a wrong password (28P01), by server setup.
    expect(fatal[0]!.code).toMatch(/^28/);
    expect(fatal[0]!.msg).toMatch(/^cannot start: the database refused baton: .*\(28[0-9A-Z]{3}\); check DATABASE_URL$/);
    expect(result.stdout + result.stderr).not.toMatch(STACK);
  });
});
