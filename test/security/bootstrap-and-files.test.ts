import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createStore } from '../../src/store/index.js';
import { runBaton, startServe, type ServeHandle } from '../helpers/baton-bin.js';
import { until } from '../helpers/until.js';

/**
 * Against the real `baton serve` (the built bin, SQLite, stdout and stderr piped as a
 * container runtime collects them): the first 10 characters of BATON_BOOTSTRAP_TOKEN logged and
 * stored in clear, a minted admin token on stderr, a data directory of 0755 and a database, WAL and
 * shared-memory file of 0644.
 */

const mode = (file: string) => fs.statSync(file).mode & 0o777;

describe('bootstrap secrets and file modes of baton serve', () => {
  let root: string;
  let dataDir: string;
  let server: ServeHandle | undefined;

  beforeEach(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-files-'));
    dataDir = path.join(root, 'data');
  });
  afterEach(async () => {
    await server?.stop();
    server = undefined;
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('writes a minted first token to a 0600 file, never to the log, when there is no terminal', async () => {
    server = await startServe({ BATON_DATA_DIR: dataDir, LOG_LEVEL: 'trace' }, root);
    const file = path.join(dataDir, 'first-admin-token');
    await until(() => server!.output().includes(file), 'the log line naming the token file');
    const token = fs.readFileSync(file, 'utf8').trim();
    expect(token).toMatch(/^baton_[A-Za-z0-9_-]{43}$/);
    expect(mode(file)).toBe(0o600);
    expect(server.output()).not.toContain(token);
    expect(server.output()).not.toContain(token.slice(0, 10));
    const me = await fetch(`${server.url}/api/me`, { headers: { authorization: `Bearer ${token}` } });
    expect(await me.json()).toMatchObject({ token: { name: 'admin', scope: 'admin' } });
  });

  it('logs and keeps nothing of a supplied bootstrap token, and refuses one shorter than 32 characters', async () => {
    const short = await runBaton(['config', 'check'], {
      env: { BATON_DATA_DIR: dataDir, BATON_BOOTSTRAP_TOKEN: 'baton_only-24-characters' },
      cwd: root,
    });
    expect(short.code).toBe(1);
    expect(short.stderr).toContain('BATON_BOOTSTRAP_TOKEN must be at least 32 characters without spaces');
    expect(short.stderr + short.stdout).not.toContain('only-24');

    const given = 'baton_Sup1ied-bootstrap-token-for-this-test-only';
    server = await startServe({ BATON_DATA_DIR: dataDir, BATON_BOOTSTRAP_TOKEN: given, LOG_LEVEL: 'trace' }, root);
    await until(() => server!.output().includes('baton started'), 'baton to start');
    expect((await fetch(`${server.url}/api/me`, { headers: { authorization: `Bearer ${given}` } })).status).toBe(200);
    await server.stop();
    server = undefined;
    // The issue: its first 10 characters were in the log and in the database. Now not even 6.
    const dbFiles = fs.readdirSync(dataDir).filter((f) => f.startsWith('baton.db'));
    const stored = dbFiles.map((f) => fs.readFileSync(path.join(dataDir, f)).toString('latin1')).join('');
    expect(stored).not.toContain(given.slice(0, 10));
    expect(stored).not.toContain('Sup1ie');
    expect(fs.existsSync(path.join(dataDir, 'first-admin-token'))).toBe(false);
  });

  it('keeps the data directory 0700 and the database, WAL and shared-memory files 0600', async () => {
    server = await startServe({ BATON_DATA_DIR: dataDir, BATON_BOOTSTRAP_TOKEN: 'baton_files-test-admin-token-0123456789' }, root);
    await until(() => server!.output().includes('baton started'), 'baton to start');
    const db = path.join(dataDir, 'baton.db');
    await until(() => fs.existsSync(`${db}-wal`) && fs.existsSync(`${db}-shm`), 'the WAL files');
    expect(mode(dataDir)).toBe(0o700);
    for (const file of [db, `${db}-wal`, `${db}-shm`]) expect(mode(file), file).toBe(0o600);
    // Everything baton and the runners it starts (they inherit it) create later is private too:
    // logs, exit records, workspace files.
    expect(fs.readFileSync(`/proc/${server.process.pid}/status`, 'utf8')).toMatch(/^Umask:\s+0077$/m);
    // Nothing to warn about.
    expect(server.output()).not.toMatch(/other local users can/);
  });

  it('warns at every start about a data directory or database that others can read', async () => {
    fs.mkdirSync(dataDir, { mode: 0o755 });
    fs.chmodSync(dataDir, 0o755);
    const store = createStore({ url: `sqlite:${path.join(dataDir, 'baton.db')}` });
    await store.migrate();
    await store.close();
    fs.chmodSync(path.join(dataDir, 'baton.db'), 0o644);
    server = await startServe({ BATON_DATA_DIR: dataDir, BATON_BOOTSTRAP_TOKEN: 'baton_files-test-admin-token-0123456789' }, root);
    await until(() => server!.output().includes('baton started'), 'baton to start');
    expect(server.output()).toContain(`${dataDir} has mode 0755: other local users can read it`);
    expect(server.output()).toContain(`Run \\"chmod 700 ${dataDir}\\"`);
    expect(server.output()).toContain(`${path.join(dataDir, 'baton.db')} has mode 0644: other local users can read it`);
  });
});
