import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_RUN_LOG_MAX_BYTES } from '../../src/runs/index.js';
import { createMemoryProvider, type MemoryProvider } from '../../src/workspaces/index.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { assertBuilt, BATON_BIN } from '../helpers/baton-bin.js';
import { createSqliteTestStore, type TestStore } from '../helpers/stores.js';
import { until } from '../helpers/until.js';
import { createBareRepo } from '../fakes/agent/git-repos.js';
import { FAKE_CLAUDE } from '../fakes/agent/runner-fixture.js';

// An agent that writes 50 MB in a burst, through the real runner (`baton agent`, the built bin, a
// process of its own) to a real baton app on SQLite. Before, such a run was read in quadratic time
// (it hit the duration limit), left megabytes of progress events per run and a runner of 180 MB.
//
// The runner runs with a V8 heap far smaller than the output (32 MiB old space, 1 MiB semi-space):
// a runner that held on to output would die of it. Its peak RSS is what it reports itself
// (`runner peak memory`, from getrusage) and is printed here, for the record.

const BURST_BYTES = 50_000_000;
const RUNNER_NODE_FLAGS = ['--max-old-space-size=32', '--max-semi-space-size=1'];

/**
 * The stored log: within the limit, from the run's first line to its last, saying where lines are
 * missing — cut by the server (its marker) or dropped by the runner while the server was busier
 * than the agent (which of the two depends on the machine's speed).
 */
function expectBoundedLog(lines: string[], storedBytes: number, peakRssMiB: number | null) {
  // Buffers live outside the V8 heap the flags limit: the process as a whole must stay small too
  // (a run with a few lines of output peaks at about 55 MiB; these measured 89-99 MiB).
  expect(peakRssMiB).not.toBeNull();
  expect(peakRssMiB).toBeLessThan(160);
  expect(storedBytes).toBeLessThanOrEqual(DEFAULT_RUN_LOG_MAX_BYTES);
  expect(lines[0]).toMatch(/^\[baton\] run \d+ stage analyse #1$/);
  expect(lines.at(-1)).toMatch(/^\[baton\] runner peak memory \(RSS\): \d+ MiB$/);
  expect(lines.filter((l) => l.includes('of output are not stored here')).length).toBeLessThanOrEqual(1);
  expect(lines.some((l) => l.includes('of output are not stored here') || / log lines were not sent /.test(l))).toBe(true);
}

describe('an agent that writes 50 MB in a burst', () => {
  let root: string;
  let store: TestStore;
  let app: TestApp;
  let provider: MemoryProvider;

  beforeEach(async () => {
    assertBuilt();
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-output-'));
    store = await createSqliteTestStore();
    provider = createMemoryProvider();
    app = await startTestApp(store, { deps: { provider } });
  });

  afterEach(async () => {
    await app.close();
    await store.cleanup();
    fs.rmSync(root, { recursive: true, force: true });
  });

  /** Queues a run, waits until it is running, and runs its runner with `env` to its exit. */
  async function runWithRunner(env: Record<string, string>) {
    const { run } = await app.app.engine.enqueue({ stage: 'analyse', owner: 'acme', repo: 'app', number: 1 });
    await until(async () => (await app.app.runs.get(run.id))?.status === 'running', 'the run to be running');
    const spec = provider.created.find((s) => s.runId === run.id)!;
    const workdir = fs.mkdtempSync(path.join(root, 'ws-'));
    const output = fs.openSync(path.join(root, `runner-${run.id}.out`), 'w');
    const runner = spawn(process.execPath, [...RUNNER_NODE_FLAGS, BATON_BIN, 'agent'], {
      cwd: workdir,
      env: {
        PATH: process.env.PATH,
        HOME: root,
        TASK_TYPE: 'analyse',
        ISSUE_NUMBER: '1',
        REPO_CLONE_URL: createBareRepo(root, `app-${run.id}`),
        // The app listens on a port of its own; the spec names the configured callback base.
        CALLBACK_URL: new URL(new URL(spec.callbackUrl).pathname, app.url).toString(),
        CALLBACK_TOKEN: spec.callbackToken,
        BATON_RUN_ID: String(run.id),
        BATON_WORKDIR: workdir,
        BATON_AGENT_LOG_PORT: '0',
        ...env,
      },
      stdio: ['ignore', output, output],
    });
    const code = await new Promise<number | null>((resolve) => runner.once('exit', resolve));
    fs.closeSync(output);
    const finished = await app.app.runs.get(run.id);
    const events = (await app.app.runs.events(run.id)).filter((e) => e.type === 'run:progress');
    const log = fs.readFileSync(path.join(workdir, '.baton', 'agent.log'), 'utf8');
    const peak = /runner peak memory \(RSS\): (\d+) MiB/.exec(log);
    return {
      code,
      finished,
      storedBytes: events.reduce((sum, e) => sum + Buffer.byteLength(JSON.stringify(e.data)), 0),
      lines: events.flatMap((e) => (e.data?.lines as string[] | undefined) ?? []),
      peakRssMiB: peak ? Number(peak[1]) : null,
      workdir,
    };
  }

  it('in stream-json: the run finishes, the database keeps a bounded log, the raw log is whole', async () => {
    // 250,000 small messages: a parser quadratic in their number would not finish in hours.
    const result = await runWithRunner({
      BATON_AGENT_COMMAND: JSON.stringify([process.execPath, FAKE_CLAUDE]),
      FAKE_CLAUDE_MODE: 'flood',
      FAKE_CLAUDE_FLOOD_BYTES: String(BURST_BYTES),
      FAKE_CLAUDE_FLOOD_TEXT_BYTES: '60',
    });
    console.log(`stream-json burst: runner peak RSS ${result.peakRssMiB} MiB, ${result.storedBytes} bytes of log stored`);
    expect(result.code).toBe(0);
    expect(result.finished).toMatchObject({ status: 'succeeded' });
    expectBoundedLog(result.lines, result.storedBytes, result.peakRssMiB);
    // Every line the agent wrote (init, the messages, the result) is in the workspace's raw log.
    const messages = Number(/^Flooded (\d+) messages\.$/.exec(result.finished!.summary!)![1]);
    const raw = fs.readFileSync(path.join(result.workdir, '.baton', 'agent.ndjson'));
    expect(raw.length).toBeGreaterThan(BURST_BYTES * 0.9);
    let newlines = 0;
    for (let i = raw.indexOf(10); i !== -1; i = raw.indexOf(10, i + 1)) newlines += 1;
    expect(newlines).toBe(messages + 2);
  }, 180_000);

  it('in plain text: the same', async () => {
    const flood = `const line = 'y'.repeat(99) + '\\n'; const chunk = line.repeat(1000); let n = 0;
      const write = () => { while (n < ${BURST_BYTES}) { n += chunk.length; if (!process.stdout.write(chunk)) return void process.stdout.once('drain', write); } console.log('all written'); };
      write();`;
    const result = await runWithRunner({
      BATON_AGENT_COMMAND: JSON.stringify([process.execPath, '-e', flood]),
      BATON_AGENT_OUTPUT: 'text',
    });
    console.log(`text burst: runner peak RSS ${result.peakRssMiB} MiB, ${result.storedBytes} bytes of log stored`);
    expect(result.code).toBe(0);
    expect(result.finished).toMatchObject({ status: 'succeeded' });
    expect(result.finished?.summary).toMatch(/all written$/);
    expectBoundedLog(result.lines, result.storedBytes, result.peakRssMiB);
  }, 180_000);
});
