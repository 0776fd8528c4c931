import { afterEach, describe, expect, it } from 'vitest';
import { assertBuilt } from '../helpers/baton-bin.js';
import { until } from '../helpers/until.js';
import { expectSettled, printFigures } from './invariants.js';
import { runProcesses } from './proc.js';
import { chaosRandom, chaosTimeout, moreRounds } from './seed.js';
import { createWorld, type AgentMode, type ApiRun, type Delivery, type World } from './world.js';

// Agents that misbehave, through the real runner in its sandbox: one that crashes mid-stream, one
// that hangs until its run's duration limit (1 minute here) stops it, one that prints only
// garbage, one that writes 50 MB of output in a burst, next to well-behaved ones (a runner killed
// -9 is killed-runner.test.ts). Each run ends once, as its agent deserved, with its comments once
// each, and nothing of it is left running.

const EXPECTED: Record<AgentMode, string | string[]> = {
  success: 'succeeded',
  crash: 'failed',
  garbage: 'failed',
  flood: 'succeeded',
  // The runner stops the agent at the run's duration limit and reports it; baton would time the
  // run out itself 2 minutes later if the report were lost.
  hang: ['timed_out', 'failed'],
};

let world: World | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

describe('chaos: agent faults', () => {
  it(
    'crash, hang, garbage and 50 MB of output each end their run once, as deserved, and leave nothing',
    async () => {
      assertBuilt();
      const rnd = chaosRandom('agent faults');
      world = await createWorld({ name: 'agents', database: 'sqlite', concurrency: 4, env: { RUN_MAX_DURATION_MINUTES: '1' } });
      await world.start(0);
      await world.ready(0, Date.now());
      const deliveries: Delivery[] = [];
      const expected: Record<number, string | string[]> = {};
      const startedAt = Date.now();
      for (let round = 0; moreRounds(startedAt, round); round++) {
        // Every fault once per round, and well-behaved agents between them, in a seeded order.
        const modes: AgentMode[] = ['crash', 'hang', 'garbage', 'flood', 'success', 'success'];
        for (let i = modes.length - 1; i > 0; i--) {
          const j = rnd.int(0, i);
          [modes[i], modes[j]] = [modes[j]!, modes[i]!];
        }
        for (const [i, number] of world.addIssues(modes.length).entries()) {
          world.setAgent(number, modes[i]!);
          expected[number] = EXPECTED[modes[i]!];
          const d = world.issueOpened(number);
          deliveries.push(d);
          expect(await world.deliver(d), `delivery for #${number}: ${d.answers.join(' | ')}`).toBe(true);
        }
        if (round === 0) {
          // The /proc scan sees a run's processes (else "nothing left" would prove nothing).
          const hanging = Number(Object.entries(expected).find(([, e]) => Array.isArray(e))![0]);
          const run = await until(
            async () => (await world!.runs()).find((r) => r.number === hanging && r.status === 'running'),
            'the hanging run to run',
          );
          await until(
            () => runProcesses(world!.dataDir).some((p) => p.runId === String(run.id)),
            `the processes of run ${run.id} in /proc`,
          );
        }
        // The next round starts when this one has drained, so a long run keeps its limit.
        await expectSettled(world, deliveries, { since: Date.now(), expected, timeoutMs: 240_000 });
      }
      const settled = await expectSettled(world, deliveries, { since: startedAt, expected });
      printFigures('agent faults', {
        seed: rnd.seed,
        runs: settled.runs.length,
        outcomes: countBy(settled.runs),
        'all ended and cleaned up after ms': settled.cleanMs,
      });
    },
    chaosTimeout(600_000),
  );
});

function countBy(runs: ApiRun[]): string {
  const counts = new Map<string, number>();
  for (const r of runs) counts.set(r.status, (counts.get(r.status) ?? 0) + 1);
  return [...counts].map(([s, n]) => `${s} ${n}`).join(' / ');
}
