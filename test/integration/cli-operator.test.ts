import { Writable } from 'node:stream';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/server/index.js';
import { logsCommand, queueCommand, runsCommand, type CommandIo } from '../../src/cli/index.js';
import { tokenCommand } from '../../src/cli/token-commands.js';
import { createSqliteTestStore, type TestStore } from '../helpers/stores.js';
import { ADMIN_TOKEN, bearer, startTestApp, type TestApp } from '../helpers/app.js';
import { until } from '../helpers/until.js';

interface Captured extends CommandIo {
  stdout: string[];
  stderr: string[];
}

function captureIo(env: Record<string, string | undefined>): Captured {
  const stdout: string[] = [];
  const stderr: string[] = [];
  return { stdout, stderr, env, out: (text) => stdout.push(text), err: (text) => stderr.push(text) };
}

describe('baton token (on the database)', () => {
  let t: TestStore;
  let server: TestApp;
  let logLines: string[];

  beforeEach(async () => {
    t = await createSqliteTestStore();
    logLines = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        logLines.push(String(chunk));
        done();
      },
    });
    server = await startTestApp(t, { deps: { logger: pino({ level: 'trace' }, sink) } });
  });
  afterEach(async () => {
    await server?.close();
    await t?.cleanup();
  });

  const config = () => loadConfig({ DATABASE_URL: t.url, BATON_DATA_DIR: server.dataDir }, server.dataDir).config;
  const token = async (...argv: string[]) => {
    const io = captureIo({});
    const code = await tokenCommand(argv, io, config);
    return { code, ...io };
  };
  const status = async (secret: string) => (await fetch(`${server.url}/api/runs`, { headers: bearer(secret) })).status;

  it('mints a token shown once, lists it by hint only, and revokes it by name or id', async () => {
    const created = await token('create', '--name', 'ci');
    expect(created.code).toBe(0);
    const secret = created.stdout[0]!;
    expect(secret).toMatch(/^baton_[A-Za-z0-9_-]{43}$/);
    expect(await status(secret)).toBe(200);

    const listed = await token('list');
    expect(listed.stdout.join('\n')).toMatch(/admin[\s\S]*ci/);
    expect(listed.stdout.join('\n')).not.toContain(secret);
    expect(listed.stdout.join('\n')).toContain(secret.slice(0, 10));
    const json = JSON.parse((await token('list', '--json')).stdout[0]!) as Array<Record<string, unknown>>;
    expect(json.map((t) => t.name)).toEqual(['admin', 'ci']);
    expect(JSON.stringify(json)).not.toContain(secret);

    const duplicate = await token('create', '--name', 'ci');
    expect(duplicate.code).toBe(1);
    expect(duplicate.stderr[0]).toContain('"ci" already exists');

    expect((await token('revoke', 'ci')).code).toBe(0);
    expect(await status(secret)).toBe(401);
    expect((await token('revoke', 'ci')).code).toBe(1);

    const second = await token('create', '--name', 'ci');
    expect(second.code).toBe(0);
    const id = (
      JSON.parse((await token('list', '--json')).stdout[0]!) as Array<{ id: number; name: string; revokedAt: number | null }>
    ).find((t) => t.name === 'ci' && t.revokedAt === null)!.id;
    expect((await token('revoke', String(id))).code).toBe(0);
    expect(await status(second.stdout[0]!)).toBe(401);

    expect(logLines.join('')).not.toContain(secret);
    expect(logLines.join('')).not.toContain(second.stdout[0]!);
  });

  it('rejects a bad token name with the rule', async () => {
    const bad = await token('create', '--name', 'has space');
    expect(bad.code).toBe(1);
    expect(bad.stderr[0]).toMatch(/token name must be/);
    await expect(token('create')).rejects.toThrow(/needs --name/);
  });

  it('uses BATON_BOOTSTRAP_TOKEN as the admin token and never logs it', async () => {
    expect(await status(ADMIN_TOKEN)).toBe(200);
    expect(logLines.join('')).toContain('admin API token created');
    expect(logLines.join('')).not.toContain(ADMIN_TOKEN);
  });
});

describe('first start without tokens', () => {
  it('announces a fresh admin token once, outside the log', async () => {
    const t = await createSqliteTestStore();
    const announced: string[] = [];
    const first = await startTestApp(t, {
      env: { BATON_BOOTSTRAP_TOKEN: undefined },
      deps: { announceToken: (token) => announced.push(token) },
    });
    try {
      expect(announced).toHaveLength(1);
      expect(announced[0]).toMatch(/^baton_/);
      expect((await fetch(`${first.url}/api/runs`, { headers: bearer(announced[0]) })).status).toBe(200);
      expect(await first.app.tokens.bootstrap()).toBeNull();
    } finally {
      await first.close();
      await t.cleanup();
    }
  });
});

describe('operator commands over the API', () => {
  let t: TestStore;
  let server: TestApp;
  const io = () => captureIo({ BATON_URL: server.url, BATON_TOKEN: ADMIN_TOKEN });

  beforeEach(async () => {
    t = await createSqliteTestStore();
    server = await startTestApp(t);
    await server.app.engine.pause();
  });
  afterEach(async () => {
    await server?.close();
    await t?.cleanup();
  });

  it('lists, shows, cancels and retries runs, as tables and as JSON', async () => {
    const { run } = await server.app.engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 7 });
    await server.app.engine.enqueue({ stage: 'analyse', owner: 'acme', repo: 'app', number: 8 });

    const ls = io();
    expect(await runsCommand(['ls'], ls)).toBe(0);
    expect(ls.stdout[0]).toMatch(/^ID\s+STATUS\s+STAGE\s+TARGET/);
    expect(ls.stdout[0]).toMatch(/queued\s+develop\s+acme\/app#7/);

    const filtered = io();
    await runsCommand(['ls', '--stage', 'analyse', '--json'], filtered);
    const page = JSON.parse(filtered.stdout[0]!) as { runs: Array<{ number: number }> };
    expect(page.runs.map((r) => r.number)).toEqual([8]);

    const cancel = io();
    expect(await runsCommand(['cancel', String(run.id)], cancel)).toBe(0);
    expect(cancel.stdout[0]).toBe(`run #${run.id} is now cancelled`);

    const again = io();
    await expect(runsCommand(['cancel', String(run.id)], again)).rejects.toThrow(/already cancelled/);

    const retry = io();
    await runsCommand(['retry', String(run.id), '--json'], retry);
    expect((JSON.parse(retry.stdout[0]!) as { run: { status: string } }).run.status).toBe('queued');

    const show = io();
    await runsCommand(['show', String(run.id)], show);
    const text = show.stdout.join('\n');
    expect(text).toContain('TIMELINE');
    expect(text).toMatch(/run:cancelled\s+cancelled/);
    expect(text).toMatch(/run:requeued\s+queued/);

    await expect(runsCommand(['show', '999'], io())).rejects.toThrow(/run 999 does not exist/);
    await expect(runsCommand(['show', 'abc'], io())).rejects.toThrow(/needs a run id/);
  });

  it('pauses, resumes and reports the queue', async () => {
    await server.app.engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 7 });
    const pause = io();
    await queueCommand(['pause'], pause);
    expect(pause.stdout[0]).toMatch(/paused/);
    const stats = io();
    await queueCommand(['stats'], stats);
    expect(stats.stdout[0]).toMatch(/queued 1 .* PAUSED/);
    expect(stats.stdout.join('\n')).toMatch(/develop\s+1\s+0/);
    const resume = io();
    await queueCommand(['resume', '--json'], resume);
    expect(JSON.parse(resume.stdout[0]!)).toEqual({ paused: false });
  });

  it('says how to fix a missing or rejected token', async () => {
    await expect(runsCommand(['ls'], captureIo({ BATON_URL: server.url }))).rejects.toThrow(/BATON_TOKEN is not set/);
    await expect(runsCommand(['ls'], captureIo({ BATON_URL: server.url, BATON_TOKEN: 'baton_nope' }))).rejects.toThrow(
      /BATON_TOKEN was rejected/,
    );
  });

  it("follows a run's log live until the run ends", async () => {
    const { engine } = server.app;
    const { run } = await engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 7 });
    await engine.appendEvent(run.id, 'run:progress', { lines: ['before 1', 'before 2'] });
    const follow = io();
    const done = logsCommand([String(run.id), '--follow'], follow);
    // Connected to the event stream: what follows arrives live, not from the first read.
    await until(() => server.app.events.clientCount > 0, 'logs --follow to connect to the event stream');
    await engine.appendEvent(run.id, 'run:progress', { lines: ['live 1'] });
    await engine.appendEvent(run.id, 'run:progress', { lines: ['live 2'] });
    await engine.cancel(run.id);
    expect(await done).toBe(0);
    expect(follow.stdout).toEqual(['before 1\nbefore 2', 'live 1', 'live 2']);
    expect(follow.stderr.at(-1)).toMatch(/cancelled/);
  });

  it("shows the terminal controls in an agent's log and a forge's text as visible escapes, never raw", async () => {
    const { engine } = server.app;
    // Agent output that would clear the screen, overwrite a line (CR), use the one-byte CSI (U+009B) and reverse the text (RLO).
    const { run } = await engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 7 });
    const hostile = ['\u001b[2J\u001b[Hall tests passed', 'ok\rFAILED', 'csi \u009b31m red', 'name \u202egpj.exe'];
    await engine.appendEvent(run.id, 'run:progress', { lines: hostile });
    // eslint-disable-next-line no-control-regex
    const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202e]/;

    const logs = io();
    expect(await logsCommand([String(run.id)], logs)).toBe(0);
    const printed = logs.stdout.join('\n');
    expect(printed).not.toMatch(RAW);
    expect(printed).toContain('\\u001b[2J\\u001b[Hall tests passed');
    expect(printed).toContain('ok\\u000dFAILED');
    expect(printed).toContain('csi \\u009b31m red');
    expect(printed).toContain('name \\u202egpj.exe');

    const show = io();
    await runsCommand(['show', String(run.id)], show);
    expect(show.stdout.join('\n')).not.toMatch(RAW);
    expect(show.stdout.join('\n')).toContain('\\u001b[2J');

    // JSON stays JSON and decodes to what the agent wrote.
    const json = io();
    await runsCommand(['show', String(run.id), '--json'], json);
    expect(json.stdout.join('\n')).not.toMatch(RAW);
    expect((JSON.parse(json.stdout.join('\n')) as { log: string }).log).toBe(hostile.join('\n'));
  });
});
