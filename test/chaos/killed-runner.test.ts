import { afterEach, describe, expect, it } from 'vitest';
import { assertBuilt } from '../helpers/baton-bin.js';
import { until } from '../helpers/until.js';
import { expectSettled, printFigures } from './invariants.js';
import { runProcesses } from './proc.js';
import { chaosRandom, chaosTimeout } from './seed.js';
import { createWorld, type World } from './world.js';

// A runner killed -9 from outside while its agent hangs (the agent, in its own PID namespace, does
// not die with it). With one slot, a second issue waits behind the dead run: it runs only once
// baton notices the runner is gone.

let world: World | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

describe('chaos: a killed runner', () => {
  it(
    'a runner killed -9 ends its run once, frees its slot and leaves no process behind',
    async () => {
      assertBuilt();
      const rnd = chaosRandom('killed runner');
      world = await createWorld({
        name: 'killed-runner',
        database: 'sqlite',
        concurrency: 1,
        env: { RUN_MAX_DURATION_MINUTES: '30', AGENT_RUN_ATTEMPTS: '1' },
      });
      await world.start(0);
      await world.ready(0, Date.now());
      const [victim, witness] = world.addIssues(2) as [number, number];
      world.setAgent(victim, 'hang');
      const deliveries = [world.issueOpened(victim), world.issueOpened(witness)];
      for (const d of deliveries) expect(await world.deliver(d)).toBe(true);

      const run = await until(
        async () => (await world!.runs()).find((r) => r.number === victim && r.status === 'running'),
        'the victim to run',
      );
      // Its agent is up (hanging), so the kill leaves an agent without its runner.
      await until(
        () => runProcesses(world!.dataDir).some((p) => p.runId === String(run.id) && p.command.includes('chaos-agent.mjs')),
        `the agent of run ${run.id}`,
      );
      const runner = await until(
        () =>
          runProcesses(world!.dataDir).find(
            (p) => p.runId === String(run.id) && p.command.endsWith('baton.js agent') && !p.command.split(' ')[0]!.endsWith('bwrap'),
          ),
        `the runner of run ${run.id}`,
      );
      console.log(
        `[chaos] killed runner: run ${run.id}'s processes: ${runProcesses(world.dataDir)
          .filter((p) => p.runId === String(run.id))
          .map((p) => `${p.pid} ${p.command.slice(0, 100)}`)
          .join(' | ')}; killing ${runner.pid}`,
      );
      const killedAt = Date.now();
      process.kill(runner.pid, 'SIGKILL');
      // The victim holds the only slot: the witness runs only once the dead runner is noticed.
      const settled = await expectSettled(world, deliveries, {
        since: killedAt,
        expected: { [victim]: 'failed', [witness]: 'succeeded' },
        timeoutMs: 120_000,
      });
      printFigures('killed runner', { seed: rnd.seed, 'run ended and all cleaned up after the kill ms': settled.cleanMs });
    },
    chaosTimeout(300_000),
  );
});
