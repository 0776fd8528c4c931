import { afterEach, describe, it } from 'vitest';
import { assertBuilt } from '../helpers/baton-bin.js';
import { postgresAvailable } from '../helpers/stores.js';
import { until } from '../helpers/until.js';
import { expectSettled, printFigures } from './invariants.js';
import { chaosRandom, chaosTimeout, faultDelay, moreRounds, type Random } from './seed.js';
import { createWorld, type Delivery, type World } from './world.js';

// Two replicas reach PostgreSQL through a TCP proxy that the test cuts at random moments for a
// random while (every connection dropped, new ones refused, as when the database host goes away)
// during a storm of webhooks and the runs they start. A delivery that fails during a cut (5xx, or
// no answer) is delivered again with the same id once it can be; workspaces keep running through
// the cut and call back whenever they can.

const EVENTS_PER_ROUND = 12;
const CUTS_PER_ROUND = 3;

let world: World | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

async function cutRound(w: World, rnd: Random, figures: { cuts: number[]; recoveries: number[] }): Promise<Delivery[]> {
  const deliveries = w.addIssues(EVENTS_PER_ROUND).map((n) => w.issueOpened(n));
  const cuts = (async () => {
    for (let i = 0; i < CUTS_PER_ROUND; i++) {
      await faultDelay(rnd.int(500, 4000));
      const length = rnd.int(500, 6000);
      w.proxy!.cut();
      await faultDelay(length);
      w.proxy!.restore();
      const restored = Date.now();
      figures.cuts.push(length);
      // Recovery: every replica answers /ready again.
      for (let r = 0; r < w.ports.length; r++) await w.ready(r, restored);
      figures.recoveries.push(Date.now() - restored);
    }
  })();
  const senders = deliveries.map(async (d, i) => {
    await faultDelay(i * rnd.int(50, 400));
    await until(() => w.deliver(d, rnd.int(0, w.ports.length - 1)), `the delivery for issue #${d.number} to be accepted`, 120_000, 200);
  });
  await Promise.all([cuts, ...senders]);
  return deliveries;
}

describe('chaos: database cuts', () => {
  it(
    'on PostgreSQL with two replicas behind a cut link: every accepted event is one finished run, comments once each in order',
    async (ctx) => {
      assertBuilt();
      if (!(await postgresAvailable())) ctx.skip();
      const rnd = chaosRandom('database cuts');
      world = await createWorld({ name: 'dbcut', database: 'postgres', replicas: 2, databaseProxy: true });
      for (let i = 0; i < 2; i++) await world.start(i);
      for (let i = 0; i < 2; i++) await world.ready(i, Date.now());
      const figures = { cuts: [] as number[], recoveries: [] as number[] };
      const deliveries: Delivery[] = [];
      const startedAt = Date.now();
      for (let round = 0; moreRounds(startedAt, round); round++) deliveries.push(...(await cutRound(world, rnd, figures)));
      const settled = await expectSettled(world, deliveries, { since: Date.now() });
      printFigures('database cuts, PostgreSQL, 2 replicas', {
        seed: rnd.seed,
        events: deliveries.length,
        'redelivered after no answer or 5xx': deliveries.filter((d) => d.unanswered > 0).length,
        'cuts ms': figures.cuts.join('/'),
        'back to /ready after a cut ms (max)': Math.max(...figures.recoveries),
        'connections refused during cuts': world.proxy!.refused,
        'runs re-provisioned': settled.runs.filter((r) => r.attempts > 1).length,
        'drain after the last cut ms': settled.drainMs,
        'clean ms': settled.cleanMs,
      });
    },
    chaosTimeout(600_000),
  );
});
