import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULTS } from '../../src/runs/index.js';
import { createServeWorld, type ServeWorld } from '../helpers/serve-world.js';
import { until } from '../helpers/until.js';

/**
 * `kill -9` of the server after the local runner started but before the run was marked running:
 * the run is re-claimed with a new callback token and adopts the runner that is still alive, whose
 * result (sent with the first token) must be accepted: the run ends `succeeded`, not `timed_out`.
 */
const RESULT = 'adopted and finished';

let world: ServeWorld | undefined;

afterEach(async () => {
  await world?.close();
  world = undefined;
});

describe('a run whose server died while provisioning', () => {
  it('keeps its result: the re-claim adopts the live runner and accepts its callback', async () => {
    const result = JSON.stringify({ type: 'result', subtype: 'success', is_error: false, num_turns: 1, result: RESULT });
    world = await createServeWorld({
      name: 'adoption',
      // The agent waits for this file, so it reports only after the run was re-claimed.
      agent: (shared) => ['/bin/sh', '-c', `while [ ! -e ${shared}/gate ]; do sleep 0.05; done; echo '${result}'`],
      queue: { leaseSeconds: 1, backoffBaseSeconds: 0.1 },
      engineQueue: { ...DEFAULTS.queue, leaseMs: 1_000 },
    });
    const first = await world.start({ HOLD_AFTER_CREATE: '1' });
    const { engine, runs, fixture } = world;
    const gate = path.join(fixture.shared, 'gate');
    const { run } = await engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 1 });
    const created = await first.waitFor((m) => m.created !== undefined, 60_000);
    const recordFile = path.join(fixture.dataDir, 'workspaces', String(created.created), 'runner.json');
    await until(() => (JSON.parse(fs.readFileSync(recordFile, 'utf8')) as { pid: number | null }).pid, 'the runner to be started');
    expect((await runs.get(run.id))?.status).toBe('provisioning');
    await first.kill('SIGKILL');

    await world.start();
    // The dead server's lease runs out; the re-claim adopts the live workspace by its name.
    await until(async () => {
      const current = await runs.get(run.id);
      return current?.status === 'running' && current.attempts === 2;
    }, 'the run to be re-claimed and running again');
    fs.writeFileSync(gate, '');

    const finished = await until(async () => {
      const current = await runs.get(run.id);
      return current && current.status !== 'running' ? current : null;
    }, 'the run to end');
    expect(finished).toMatchObject({ status: 'succeeded', summary: RESULT });
    const transitions = (await runs.events(run.id)).filter((e) => e.type !== 'run:progress' && e.type !== 'run:prompt');
    expect(transitions.map((e) => e.type)).toEqual([
      'run:queued',
      'run:claimed',
      'run:requeued',
      'run:claimed',
      'run:started',
      'run:succeeded',
    ]);
    await until(() => !fs.existsSync(path.dirname(recordFile)), 'the workspace to be torn down');
  }, 120_000);
});
