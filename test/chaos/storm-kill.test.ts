import { afterEach, describe, it } from 'vitest';
import { assertBuilt } from '../helpers/baton-bin.js';
import { postgresAvailable } from '../helpers/stores.js';
import { until } from '../helpers/until.js';
import { expectSettled, printFigures } from './invariants.js';
import { chaosRandom, chaosTimeout, faultDelay, moreRounds, type Random } from './seed.js';
import { createWorld, type Delivery, type World } from './world.js';

// A storm of signed webhooks while `baton serve` is killed -9 at random moments and restarted on
// the same port (its runners call back there): on SQLite with one server, and on PostgreSQL with
// two replicas sharing the database and the data directory, either of which may die. Deliveries
// that got no answer (the server was down, or died before answering) are delivered again with the
// same delivery id, as Gitea's "redeliver" does; an answer lost after the event was stored must
// not make a second run.

const EVENTS_PER_ROUND = 12;
const KILLS_PER_ROUND = 3;
const SENDERS = 3;

let world: World | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

/**
 * One round: the events of `numbers` are sent by a few concurrent senders (each to a random live
 * replica); meanwhile `kills` times, after a random event and a random delay, a random replica is
 * killed and restarted. The last kill may fall after the storm, while the runs drain.
 */
async function stormRound(w: World, rnd: Random, numbers: number[], figures: { recoveries: number[] }): Promise<Delivery[]> {
  const deliveries = numbers.map((n) => w.issueOpened(n));
  const killAfter = new Set<number>();
  while (killAfter.size < Math.min(KILLS_PER_ROUND, deliveries.length)) killAfter.add(rnd.int(0, deliveries.length));
  const replicas = w.ports.length;
  const faults: Array<Promise<void>> = [];
  // One fault at a time per replica: a second kill must not race the first one's restart.
  const busy: Array<Promise<void>> = w.ports.map(() => Promise.resolve());
  const fault = (replica: number, delayMs: number, downMs: number) => {
    busy[replica] = busy[replica]!.then(() => killAndRestart(replica, delayMs, downMs));
    faults.push(busy[replica]!);
  };

  const killAndRestart = async (replica: number, delayMs: number, downMs: number) => {
    await faultDelay(delayMs);
    await w.kill(replica);
    await faultDelay(downMs);
    const restartedAt = Date.now();
    await w.start(replica);
    figures.recoveries.push(await w.ready(replica, restartedAt));
  };
  const send = async (d: Delivery) => {
    // Until some replica takes it: one that is down refuses the connection, one that dies drops it.
    await until(() => w.deliver(d, liveReplica(w, rnd)), `the delivery for issue #${d.number} to be accepted`, 120_000, 100);
  };

  let next = 0;
  const sender = async () => {
    while (next < deliveries.length) {
      const index = next++;
      if (killAfter.has(index)) fault(rnd.int(0, replicas - 1), rnd.int(0, 1500), rnd.int(0, 1000));
      await send(deliveries[index]!);
    }
  };
  await Promise.all(Array.from({ length: SENDERS }, sender));
  if (killAfter.has(deliveries.length)) fault(rnd.int(0, replicas - 1), rnd.int(0, 3000), rnd.int(0, 1000));
  await Promise.all(faults);
  return deliveries;
}

/** A replica that is up, picked at random, like a load balancer would; undefined when none is. */
function liveReplica(w: World, rnd: Random): number | undefined {
  const up = w.servers.flatMap((s, i) => (s && s.process.exitCode === null && s.process.signalCode === null ? [i] : []));
  return up.length === 0 ? undefined : rnd.pick(up);
}

async function storm(w: World, scenario: string) {
  const rnd = chaosRandom(scenario);
  for (let i = 0; i < w.ports.length; i++) await w.start(i);
  for (let i = 0; i < w.ports.length; i++) await w.ready(i, Date.now());
  const figures = { recoveries: [] as number[] };
  const deliveries: Delivery[] = [];
  const startedAt = Date.now();
  for (let round = 0; moreRounds(startedAt, round); round++) {
    deliveries.push(...(await stormRound(w, rnd, w.addIssues(EVENTS_PER_ROUND), figures)));
  }
  const stormEnded = Date.now();
  const settled = await expectSettled(w, deliveries, { since: stormEnded });
  printFigures(scenario, {
    seed: rnd.seed,
    events: deliveries.length,
    'redelivered after no answer': deliveries.filter((d) => d.unanswered > 0).length,
    kills: figures.recoveries.length,
    'recovery to /ready ms (max)': Math.max(...figures.recoveries),
    'runs re-provisioned': settled.runs.filter((r) => r.attempts > 1).length,
    'drain after the storm ms': settled.drainMs,
    'clean after the storm ms': settled.cleanMs,
  });
}

describe('chaos: webhook storm with kill -9 of baton serve', () => {
  it(
    'on SQLite: every accepted event is one finished run, comments once each in order, nothing left',
    async () => {
      assertBuilt();
      world = await createWorld({ name: 'storm-sqlite', database: 'sqlite' });
      await storm(world, 'storm + kill -9, SQLite');
    },
    chaosTimeout(600_000),
  );

  it(
    'on PostgreSQL with two replicas: the same, whichever replica dies',
    async (ctx) => {
      assertBuilt();
      if (!(await postgresAvailable())) ctx.skip();
      world = await createWorld({ name: 'storm-pg', database: 'postgres', replicas: 2 });
      await storm(world, 'storm + kill -9, PostgreSQL, 2 replicas');
    },
    chaosTimeout(600_000),
  );
});
