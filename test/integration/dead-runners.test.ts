import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULTS } from '../../src/config/index.js';
import { createRunEngine, type FullRunEngine, type Run } from '../../src/runs/index.js';
import { createStore, type Store } from '../../src/store/index.js';
import { createBareRepo } from '../fakes/agent/git-repos.js';
import { freePort } from '../helpers/baton-bin.js';
import { spawnTs, type ChildHandle } from '../helpers/child.js';
import { createSandboxFixture, type SandboxFixture } from '../helpers/sandbox.js';
import { until } from '../helpers/until.js';

/**
 * Local runners that die (with their agents) are found by the workspace check, at start and then
 * periodically: their runs fail saying so and free their slots, instead of holding them until
 * STALE_WORKSPACE_MINUTES.
 */
const CHILD = 'test/fixtures/serve-child.ts';

let root: string | undefined;
let fixture: SandboxFixture | undefined;
let store: Store | undefined;
const children: ChildHandle[] = [];

afterEach(async () => {
  await Promise.all(children.splice(0).map((c) => c.kill()));
  await store?.close();
  store = undefined;
  fixture?.cleanup();
  if (root) fs.rmSync(root, { recursive: true, force: true });
  root = undefined;
});

/** The pids runner.json names; SIGKILL of the sandbox's init ends every process of the run. */
function killRun(dataDir: string, workspace: string): number {
  const record = JSON.parse(fs.readFileSync(path.join(dataDir, 'workspaces', workspace, 'runner.json'), 'utf8')) as { pid: number };
  process.kill(record.pid, 'SIGKILL');
  return record.pid;
}

const gone = (pid: number) => {
  try {
    process.kill(pid, 0);
    return !/^\S+ \(.*\) [ZX]/.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
};

describe('dead local runners', () => {
  it('fail their runs and free their slots, whether they died while baton was down or up', async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-dead-runners-'));
    fixture = createSandboxFixture();
    const repo = createBareRepo(fixture.shared, 'app');
    fs.writeFileSync(
      path.join(root, 'baton.yaml'),
      ['queue:', '  pollSeconds: 0.1', 'repositories:', `  acme/app: { path: ${JSON.stringify(repo)} }`, ''].join('\n'),
    );
    const database = `sqlite:${path.join(root, 'baton.db')}`;
    const env = {
      PORT: String(await freePort()),
      HOST: '127.0.0.1',
      WORKSPACE_PROVIDER: 'local',
      DATABASE_URL: database,
      BATON_DATA_DIR: fixture.dataDir,
      BATON_CONFIG: path.join(root, 'baton.yaml'),
      QUEUE_CONCURRENCY: '1',
      WORKSPACE_CHECK_SECONDS: '0.5',
      // A lost runner is a failure that passes (the run would be retried): one attempt shows what the check found.
      AGENT_RUN_ATTEMPTS: '1',
      SANDBOX: JSON.stringify(fixture.sandbox),
      // An agent that never finishes: only its death ends the run.
      AGENT_COMMAND: JSON.stringify(['/bin/sh', '-c', 'sleep 1000']),
    };
    const first = spawnTs(CHILD, env);
    children.push(first);
    await first.waitFor((m) => m.ready === true);
    store = createStore({ url: database });
    const engine: FullRunEngine = createRunEngine({ store, queue: DEFAULTS.queue });
    const one = (await engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 1 })).run;
    const two = (await engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 2 })).run;
    const running = (id: number) =>
      until(async () => {
        const run = await engine.get(id);
        return run?.status === 'running' ? run : null;
      }, `run ${id} to be running`);
    const ended = (id: number) =>
      until(async () => {
        const run = await engine.get(id);
        return run && run.status !== 'running' && run.status !== 'queued' && run.status !== 'provisioning' ? run : null;
      }, `run ${id} to end`);

    // Down: baton and then the first run's runner and agent are killed; baton comes back.
    const firstRun = (await running(one.id)) as Run & { workspaceName: string };
    await first.kill('SIGKILL');
    const pid = killRun(fixture.dataDir, firstRun.workspaceName);
    await until(() => gone(pid), 'the first runner to be gone');
    const second = spawnTs(CHILD, env);
    children.push(second);
    const failed = await ended(one.id);
    expect(failed.status).toBe('failed');
    expect(failed).toMatchObject({
      lastError: 'workspace_lost',
      summary: `workspace ${firstRun.workspaceName} is stopped without a completion callback`,
    });

    // Its slot is free: the second run starts. Up: its runner dies while baton watches.
    const secondRun = (await running(two.id)) as Run & { workspaceName: string };
    killRun(fixture.dataDir, secondRun.workspaceName);
    expect(await ended(two.id)).toMatchObject({
      status: 'failed',
      lastError: 'workspace_lost',
      summary: `workspace ${secondRun.workspaceName} is stopped without a completion callback`,
    });
    for (const run of [firstRun, secondRun]) {
      await until(
        () => !fs.existsSync(path.join(fixture!.dataDir, 'workspaces', run.workspaceName)),
        `${run.workspaceName} to be torn down`,
      );
    }
  }, 120_000);
});
