import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createStore } from '../../src/store/index.js';
import { createLocalProvider, type WorkspaceProvider } from '../../src/workspaces/index.js';
import { bearer, startTestApp, type TestApp } from '../helpers/app.js';
import { fixtureJson, giteaHeaders, toBody } from '../helpers/gitea-webhook.js';
import { createSqliteTestStore, type TestStore } from '../helpers/stores.js';
import { until } from '../helpers/until.js';

/**
 * A report: "With the data directory's disk full, /ready still answered ready and webhooks were
 * accepted." On a real small filesystem (an 8 MiB tmpfs) that a test fills and frees: /ready fails
 * below the floor, a run whose workspace cannot be written fails its attempt with that reason,
 * and nothing that was accepted is lost when space returns.
 */

const SIZE_MB = 8;

/** Mounting needs root (CI runs as root); elsewhere the suite says why it is skipped. */
function mountTmpfs(): string | null {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-disk-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${SIZE_MB}m,mode=0700`, 'tmpfs', dir], { stdio: 'pipe' });
    return dir;
  } catch (err) {
    fs.rmSync(dir, { recursive: true, force: true });
    if (process.env.CI === 'true') throw new Error(`the disk-full suite must run under CI, but mounting a tmpfs failed: ${String(err)}`);
    console.warn(`cannot mount a tmpfs (${String(err).split('\n')[0]}): the disk-full suite is skipped`);
    return null;
  }
}

/** Writes a filler file until the filesystem refuses; removing it gives the space back. */
function fill(dir: string): string {
  const file = path.join(dir, 'filler');
  const fd = fs.openSync(file, 'w');
  const chunk = Buffer.alloc(64 * 1024, 1);
  try {
    for (;;) fs.writeSync(fd, chunk);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
  } finally {
    fs.closeSync(fd);
  }
  // Sub-chunk remainders too.
  try {
    fs.appendFileSync(file, Buffer.alloc(4096, 1));
    for (;;) fs.appendFileSync(file, Buffer.alloc(512, 1));
  } catch {
    // full
  }
  return file;
}

const mount = mountTmpfs();

const SECRET = 'disk-full-webhook-secret';

describe.skipIf(mount === null)('a full disk', () => {
  const root = mount!;
  let t: TestStore | undefined;
  let server: TestApp | undefined;

  afterAll(() => {
    execFileSync('umount', ['-l', root]);
    fs.rmSync(root, { recursive: true, force: true });
  });
  beforeEach(() => {
    for (const entry of fs.readdirSync(root)) fs.rmSync(path.join(root, entry), { recursive: true, force: true });
  });
  afterEach(async () => {
    for (const entry of fs.readdirSync(root)) if (entry === 'filler') fs.rmSync(path.join(root, entry), { force: true });
    await server?.close();
    await t?.cleanup();
    server = undefined;
    t = undefined;
  });

  it('turns /ready to 503 below the floor, refuses webhooks it cannot store, and loses none of them', async () => {
    const url = `sqlite:${path.join(root, 'baton.db')}`;
    const store = createStore({ url });
    t = { store, url, cleanup: () => store.close() };
    server = await startTestApp(t, {
      env: { BATON_DATA_DIR: path.join(root, 'data'), DATABASE_URL: url, BATON_MIN_FREE_SPACE_MB: '2', WEBHOOK_SECRET: SECRET },
    });
    expect((await fetch(`${server.url}/ready`)).status).toBe(200);

    const filler = fill(root);
    const full = await fetch(`${server.url}/ready`);
    expect(full.status).toBe(503);
    expect(((await full.json()) as { failing: string[] }).failing).toContain('disk space');
    const why = (await (await fetch(`${server.url}/ready`, { headers: bearer() })).json()) as {
      checks: Array<{ name: string; error?: string }>;
    };
    expect(why.checks.find((c) => c.name === 'disk space')?.error).toMatch(/free, below the floor of 2\.0 MiB \(BATON_MIN_FREE_SPACE_MB\)/);

    // Deliveries while the database cannot grow: whatever the answer, none may say "accepted"
    // without the run being stored. Gitea redelivers what was refused.
    const deliveries = [7, 8, 9].map((number) => {
      const payload = fixtureJson('issues-opened.json') as { issue: { number: number; title: string } };
      payload.issue.number = number;
      const body = toBody(payload);
      return { number, body, headers: giteaHeaders(body, { event: 'issues', eventType: 'issues', secret: SECRET }) };
    });
    const send = async (d: (typeof deliveries)[number]) =>
      (await fetch(`${server!.url}/webhook/gitea`, { method: 'POST', headers: d.headers, body: d.body })).status;
    const whileFull = await Promise.all(deliveries.map(send));
    const accepted = deliveries.filter((_, i) => whileFull[i] === 202);
    // Refused is any 5xx (the forge keeps those for redelivery), never a 4xx that says "your fault".
    for (const status of whileFull) expect(status === 202 || status >= 500, String(status)).toBe(true);

    fs.rmSync(filler);
    await until(async () => (await fetch(`${server!.url}/ready`)).status === 200, '/ready once space is back');
    // The forge redelivers every delivery it did not get a 2xx for; the accepted ones are not sent again.
    for (const d of deliveries.filter((d) => !accepted.includes(d))) expect(await send(d)).toBe(202);
    await until(async () => (await server!.app.runs.list({ limit: 10 })).length === 3, 'a run for each delivery');
    const numbers = (await server.app.runs.list({ limit: 10 })).map((r) => r.number).sort();
    expect(numbers).toEqual([7, 8, 9]);
  });

  it('fails the attempt of a run whose workspace cannot be written, saying so, and runs it once space returns', async () => {
    t = await createSqliteTestStore();
    const dataDir = path.join(root, 'data');
    fs.mkdirSync(dataDir);
    // A local workspace whose runner is a plain process: what matters here is writing its files.
    const provider: WorkspaceProvider = createLocalProvider({
      dataDir,
      command: [process.execPath, '-e', 'setTimeout(() => {}, 120000)'],
      sandbox: { kind: 'none' },
      stopGraceMs: 1_000,
    });
    server = await startTestApp(t, {
      env: { BATON_DATA_DIR: dataDir, BATON_MIN_FREE_SPACE_MB: '0' },
      file: 'queue: { maxAttempts: 1000, backoffBaseSeconds: 0.05, backoffMaxSeconds: 0.2, pollSeconds: 0.1 }\n',
      deps: { provider },
    });
    await until(() => provider.health?.().ok, 'the local provider check');

    const filler = fill(root);
    const { run } = await server.app.engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 7 });
    const refused = await until(async () => {
      const r = await server!.app.runs.get(run.id);
      return r?.lastError ? r : null;
    }, 'a failed attempt');
    expect(refused.lastError).toMatch(/^workspace \S+ cannot be written: no space left on the device \(ENOSPC\)$/);
    expect(refused.status).not.toBe('running');

    fs.rmSync(filler);
    await until(async () => (await server!.app.runs.get(run.id))?.status === 'running', 'the run to start once space is back');
    await server.app.engine.cancel(run.id, 'done');
    await until(async () => (await provider.list()).length === 0, 'the workspace to be removed');
  });
});
