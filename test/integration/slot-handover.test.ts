import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULTS } from '../../src/config/index.js';
import { createRunEngine, type FullRunEngine } from '../../src/runs/index.js';
import { createStore, type Store } from '../../src/store/index.js';
import { createBareRepo } from '../fakes/agent/git-repos.js';
import { freePort } from '../helpers/baton-bin.js';
import { spawnTs, type ChildHandle } from '../helpers/child.js';
import { createSandboxFixture, type SandboxFixture } from '../helpers/sandbox.js';
import { until } from '../helpers/until.js';

/**
 * The concurrency limit counts runs, and a run's slot is free at its callback while its runner is
 * still on its way out: live runner processes may exceed the limit by the ones handing their slot
 * over (one per slot), never more. Sampled from /proc while a queue of quick runs drains.
 */
const CHILD = 'test/fixtures/serve-child.ts';
const LIMIT = 2;
const RUNS = 8;

let root: string | undefined;
let fixture: SandboxFixture | undefined;
let store: Store | undefined;
let server: ChildHandle | undefined;

afterEach(async () => {
  await server?.kill();
  server = undefined;
  await store?.close();
  store = undefined;
  fixture?.cleanup();
  if (root) fs.rmSync(root, { recursive: true, force: true });
  root = undefined;
});

/** The runners of this test's server: node processes whose CALLBACK_URL names its port. */
function liveRunners(port: number): number {
  const marker = `CALLBACK_URL=http://127.0.0.1:${port}/`;
  let count = 0;
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (!argv[0]?.endsWith('node') || !argv.some((a) => a.endsWith('agent-cli.ts'))) continue;
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (/^\S+ \(.*\) [ZX]/.test(stat)) continue;
      if (
        fs
          .readFileSync(`/proc/${entry}/environ`, 'utf8')
          .split('\0')
          .some((v) => v.startsWith(marker))
      )
        count += 1;
    } catch {
      // Exited meanwhile.
    }
  }
  return count;
}

describe('concurrency slots', () => {
  it(`keep live runners within the limit plus one handing over per slot (limit ${LIMIT}, ${RUNS} runs)`, async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-slots-'));
    fixture = createSandboxFixture();
    const repo = createBareRepo(fixture.shared, 'app');
    fs.writeFileSync(
      path.join(root, 'baton.yaml'),
      ['queue:', '  pollSeconds: 0.1', 'repositories:', `  acme/app: { path: ${JSON.stringify(repo)} }`, ''].join('\n'),
    );
    const port = await freePort();
    const database = `sqlite:${path.join(root, 'baton.db')}`;
    server = spawnTs(CHILD, {
      PORT: String(port),
      HOST: '127.0.0.1',
      WORKSPACE_PROVIDER: 'local',
      DATABASE_URL: database,
      BATON_DATA_DIR: fixture.dataDir,
      BATON_CONFIG: path.join(root, 'baton.yaml'),
      QUEUE_CONCURRENCY: String(LIMIT),
      SANDBOX: JSON.stringify(fixture.sandbox),
      AGENT_COMMAND: JSON.stringify([
        '/bin/sh',
        '-c',
        `echo '{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"done"}'`,
      ]),
    });
    await server.waitFor((m) => m.ready === true);
    store = createStore({ url: database });
    const engine: FullRunEngine = createRunEngine({ store, queue: DEFAULTS.queue });

    let most = 0;
    const sampler = setInterval(() => (most = Math.max(most, liveRunners(port))), 10);
    try {
      const ids: number[] = [];
      for (let n = 1; n <= RUNS; n++) ids.push((await engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: n })).run.id);
      await until(
        async () => {
          const runs = await Promise.all(ids.map((id) => engine.get(id)));
          return runs.every((r) => r?.status === 'succeeded');
        },
        `all ${RUNS} runs to succeed`,
        180_000,
      );
      await until(() => liveRunners(port) === 0, 'every runner to be gone');
    } finally {
      clearInterval(sampler);
    }
    console.log(`[slots] limit ${LIMIT}: at most ${most} live runners while ${RUNS} runs drained`);
    // The sampler saw the runs at work (it can fail to, only if it never ran while a runner lived).
    expect(most).toBeGreaterThan(0);
    expect(most).toBeLessThanOrEqual(2 * LIMIT);
  }, 240_000);
});
