import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Run } from '../../src/runs/index.js';
import { createServeWorld, type ServeWorld } from '../helpers/serve-world.js';
import { until } from '../helpers/until.js';

let world: ServeWorld | undefined;

afterEach(async () => {
  await world?.close();
  world = undefined;
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

/**
 * Local runners that die (with their agents) are found by the workspace check, at start and then
 * periodically: their runs fail saying so and free their slots, instead of holding them until
 * STALE_WORKSPACE_MINUTES.
 */
describe('dead local runners', () => {
  it('fail their runs and free their slots, whether they died while baton was down or up', async () => {
    world = await createServeWorld({
      name: 'dead-runners',
      // An agent that never finishes: only its death ends the run.
      agent: ['/bin/sh', '-c', 'sleep 1000'],
      env: {
        QUEUE_CONCURRENCY: '1',
        WORKSPACE_CHECK_SECONDS: '0.5',
        // A lost runner is a failure that passes (the run would be retried): one attempt shows what the check found.
        AGENT_RUN_ATTEMPTS: '1',
      },
    });
    const first = await world.start();
    const { engine, runs, fixture } = world;
    const one = (await engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 1 })).run;
    const two = (await engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 2 })).run;
    const running = (id: number) =>
      until(async () => {
        const run = await runs.get(id);
        return run?.status === 'running' ? run : null;
      }, `run ${id} to be running`);
    const ended = (id: number) =>
      until(async () => {
        const run = await runs.get(id);
        return run && run.status !== 'running' && run.status !== 'queued' && run.status !== 'provisioning' ? run : null;
      }, `run ${id} to end`);

    // Down: baton and then the first run's runner and agent are killed; baton comes back.
    const firstRun = (await running(one.id)) as Run & { workspaceName: string };
    await first.kill('SIGKILL');
    const pid = killRun(fixture.dataDir, firstRun.workspaceName);
    await until(() => gone(pid), 'the first runner to be gone');
    await world.start();
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
        () => !fs.existsSync(path.join(fixture.dataDir, 'workspaces', run.workspaceName)),
        `${run.workspaceName} to be torn down`,
      );
    }
  }, 120_000);
});
