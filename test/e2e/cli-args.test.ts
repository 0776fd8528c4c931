import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, startTestApp, type TestApp } from '../helpers/app.js';
import { runBaton } from '../helpers/baton-bin.js';
import { createSqliteTestStore, type TestStore } from '../helpers/stores.js';

/** Every command line of the built `baton` bin, as a user types it. */
const COMMANDS = [
  'serve',
  'migrate',
  'config',
  'config check',
  'token',
  'token create',
  'token list',
  'token revoke',
  'runs',
  'runs ls',
  'runs show',
  'runs retry',
  'runs cancel',
  'queue',
  'queue pause',
  'queue resume',
  'queue stats',
  'logs',
  'deliveries',
  'deliveries ls',
  'deliveries show',
  'deliveries replay',
  'init',
  'agent',
];

/** Runs them all at once: each is a process of its own. */
const runAll = (lines: string[][], env?: Record<string, string>) => Promise.all(lines.map((args) => runBaton(args, { env })));

describe('baton command lines', () => {
  let t: TestStore;
  let server: TestApp;
  let env: Record<string, string>;

  beforeAll(async () => {
    t = await createSqliteTestStore();
    server = await startTestApp(t);
    await server.app.engine.pause();
    env = { BATON_URL: server.url, BATON_TOKEN: ADMIN_TOKEN };
  });
  afterAll(async () => {
    await server?.close();
    await t?.cleanup();
  });

  it('answers --help for every command with its usage on stdout, exit 0', async () => {
    const answers = await runAll(COMMANDS.map((c) => [...c.split(' '), '--help']));
    for (const [i, answer] of answers.entries()) {
      expect({ command: COMMANDS[i], code: answer.code, stderr: answer.stderr }).toEqual({ command: COMMANDS[i], code: 0, stderr: '' });
      expect(answer.stdout, COMMANDS[i]).toMatch(new RegExp(`^Usage: baton ${COMMANDS[i]}\\b`, 'm'));
    }
    // `baton help runs` is `baton runs --help`.
    const [viaHelp, direct] = await runAll([
      ['help', 'runs'],
      ['runs', '--help'],
    ]);
    expect(viaHelp!.stdout).toBe(direct!.stdout);
  });

  it('refuses an unknown option on every command, naming it and the usage, exit 2', async () => {
    const answers = await runAll(
      COMMANDS.map((c) => [...c.split(' '), '--bogus']),
      env,
    );
    for (const [i, answer] of answers.entries()) {
      expect({ command: COMMANDS[i], code: answer.code, stdout: answer.stdout }).toEqual({ command: COMMANDS[i], code: 2, stdout: '' });
      expect(answer.stderr, COMMANDS[i]).toContain('--bogus');
      expect(answer.stderr, COMMANDS[i]).toMatch(/usage: baton /i);
    }
  });

  it('takes no option as the value of another: --status --json is a missing status', async () => {
    const [both, last, empty] = await runAll(
      [
        ['runs', 'ls', '--status', '--json'],
        ['runs', 'ls', '--status'],
        ['runs', 'ls', '--status='],
      ],
      env,
    );
    for (const answer of [both!, last!, empty!]) {
      expect(answer.code).toBe(2);
      expect(answer.stdout).toBe('');
      expect(answer.stderr).toMatch(/^baton runs ls: .*'?--status/);
      expect(answer.stderr).toContain('usage: baton runs ls [--status STATUS]');
    }
  });

  it('filters by the value that follows the option, in either form', async () => {
    const { engine } = server.app;
    const queued = await engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 7 });
    const cancelled = await engine.enqueue({ stage: 'analyse', owner: 'acme', repo: 'app', number: 8 });
    await engine.cancel(cancelled.run.id);
    const [spaced, joined, all] = await runAll(
      [
        ['runs', 'ls', '--status', 'queued', '--json'],
        ['runs', 'ls', '--json', '--status=cancelled'],
        ['runs', 'ls'],
      ],
      env,
    );
    const ids = (answer: { stdout: string }) => (JSON.parse(answer.stdout) as { runs: Array<{ id: number }> }).runs.map((r) => r.id);
    expect(spaced!.code).toBe(0);
    expect(ids(spaced!)).toEqual([queued.run.id]);
    expect(ids(joined!)).toEqual([cancelled.run.id]);
    expect(all!.stdout).toMatch(/^ID\s+STATUS\s+STAGE/);
  });

  it('names missing and stray arguments, and does nothing', async () => {
    const { run } = await server.app.engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 9 });
    const [noId, badId, extra, noName, noSub, unknownSub] = await runAll(
      [['runs', 'show'], ['logs', 'abc'], ['runs', 'cancel', String(run.id), '2'], ['token', 'create'], ['queue'], ['config', 'chekc']],
      env,
    );
    expect(noId).toMatchObject({ code: 2, stderr: expect.stringContaining('baton runs show: needs a run id') });
    expect(badId).toMatchObject({ code: 2, stderr: expect.stringContaining('needs a run id (a whole number), got "abc"') });
    expect(extra).toMatchObject({ code: 2, stderr: expect.stringContaining('baton runs cancel: unexpected argument "2"') });
    expect(noName).toMatchObject({ code: 2, stderr: expect.stringContaining('baton token create needs --name NAME') });
    expect(noSub).toMatchObject({ code: 2, stderr: expect.stringContaining('baton queue: needs a subcommand') });
    expect(noSub!.stderr).toContain('baton queue stats [--json]');
    expect(unknownSub).toMatchObject({ code: 2, stderr: expect.stringContaining('baton config: unknown subcommand "chekc"') });
    expect((await server.app.runs.get(run.id))?.status).toBe('queued');
  });
});
