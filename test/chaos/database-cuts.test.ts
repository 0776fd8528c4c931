import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { assertBuilt } from '../helpers/baton-bin.js';
import { mountSmallDisk, type SmallDisk } from '../helpers/small-disk.js';
import { postgresAvailable } from '../helpers/stores.js';
import { until } from '../helpers/until.js';
import { expectSettled, printFigures } from './invariants.js';
import { chaosRandom, chaosTimeout, faultDelay, moreRounds, type Random } from './seed.js';
import { createWorld, type Delivery, type World } from './world.js';

// Two replicas reach PostgreSQL through a TCP proxy that the test cuts (every connection dropped,
// new ones refused: the database host went away), stalls (connections held, nothing forwarded: a
// frozen host, a failover) and flaps (cut and back, many times a second) during a storm of
// webhooks and the runs they start. Each delivery is sent once, as Gitea and GitHub send it: a
// delivery that is not answered 2xx is lost for the forge. So every delivery must be answered 2xx
// (stored in the database, or in the replica's spool), except while replica 0's spool disk (a
// small tmpfs) is full and the database away: only then may it answer 503. Then replica 1 is
// killed -9 with deliveries in its spool, restarted while the database is still away, and
// everything it had answered 2xx must become exactly one run once the database is back.

const EVENTS_PER_ROUND = 18;
const SPOOL_DISK_MB = 4;

let world: World | undefined;
let disk: SmallDisk | null = null;
afterEach(async () => {
  try {
    await world?.close();
  } finally {
    world = undefined;
    disk?.unmount();
    disk = null;
  }
});

interface Figures {
  faults: string[];
  answerMs: number[];
}

/** The storm: every delivery sent once to a random replica, while the link is cut, stalled and flapped in a seeded order. */
async function stormRound(w: World, rnd: Random, figures: Figures): Promise<Delivery[]> {
  const deliveries = w.addIssues(EVENTS_PER_ROUND).map((n) => w.issueOpened(n));
  const proxy = w.proxy!;
  const kinds = ['cut', 'stall', 'flap'];
  for (let i = kinds.length - 1; i > 0; i--) {
    const j = rnd.int(0, i);
    [kinds[i], kinds[j]] = [kinds[j]!, kinds[i]!];
  }
  const faults = (async () => {
    for (const kind of kinds) {
      await faultDelay(rnd.int(300, 1500));
      if (kind === 'cut') {
        const ms = rnd.int(1000, 5000);
        proxy.cut();
        await faultDelay(ms);
        proxy.restore();
        figures.faults.push(`cut ${ms}`);
      } else if (kind === 'stall') {
        // Longer than the accept budget (2 s): what arrives meanwhile must go to the spool.
        const ms = rnd.int(2500, 7000);
        proxy.stall();
        await faultDelay(ms);
        proxy.restore();
        figures.faults.push(`stall ${ms}`);
      } else {
        const flips = rnd.int(4, 10);
        for (let i = 0; i < flips; i++) {
          proxy.cut();
          await faultDelay(rnd.int(50, 400));
          proxy.restore();
          await faultDelay(rnd.int(50, 500));
        }
        figures.faults.push(`flap ×${flips}`);
      }
    }
  })();
  const senders = deliveries.map(async (d, i) => {
    await faultDelay(i * rnd.int(400, 900));
    await w.deliver(d, rnd.int(0, w.ports.length - 1));
    if (d.last) figures.answerMs.push(d.last.answeredAt - d.last.sentAt);
  });
  await Promise.all([faults, ...senders]);
  return deliveries;
}

/**
 * Waits until no replica's spool holds anything (each answers its own `/api/deliveries/health`):
 * nothing pending, and no segment left on disk (a drained segment is deleted a moment after its
 * last delivery is in the database; a disk filled before that would have its space back).
 */
async function spoolsDrained(w: World): Promise<void> {
  const pending = async (i: number) => {
    const answer = await w.apiOf(i, '/api/deliveries/health');
    if (answer?.status !== 200) return undefined;
    const spool = (JSON.parse(answer.text) as { spool: { pending: number; bytes: number } | null }).spool;
    return spool ? spool.pending + spool.bytes : undefined;
  };
  await until(
    async () => {
      for (let i = 0; i < w.ports.length; i++) if ((await pending(i)) !== 0) return false;
      return true;
    },
    'every replica to have drained its spool into the database',
    120_000,
    200,
  );
}

/**
 * Replica 0's spool disk full while the database is cut: what it gets is stored nowhere (503);
 * replica 1 spools; once the database is back replica 0 stores in it again, disk full or not.
 */
async function fullSpoolDisk(w: World, d: SmallDisk, windows: Array<{ from: number; to: number }>): Promise<Delivery[]> {
  const [a, b, c, e] = w.addIssues(4).map((n) => w.issueOpened(n));
  const from = Date.now();
  d.fill();
  w.proxy!.cut();
  await w.deliver(a!, 0);
  await w.deliver(b!, 1);
  await w.deliver(c!, 0);
  w.proxy!.restore();
  await w.ready(0, Date.now());
  await w.deliver(e!, 0);
  d.free();
  windows.push({ from, to: Date.now() });
  expect(
    [a, b, c, e].map((x) => ({ status: x!.last?.status, spooled: x!.spooled ?? false })),
    [a, b, c, e].map((x) => x!.answers.join(' | ')).join('\n'),
  ).toEqual([
    { status: 503, spooled: false },
    { status: 202, spooled: true },
    { status: 503, spooled: false },
    { status: 202, spooled: false },
  ]);
  return [a!, b!, c!, e!];
}

/**
 * kill -9 of `replica` with a spool that holds deliveries (during `outage`): some answered one by
 * one, then more in flight when the kill comes. Restarted while the database is still away, it
 * drains its spool once it is back.
 */
async function killWithSpool(
  w: World,
  rnd: Random,
  replica: number,
  outage: { begin(): void; end(): void },
): Promise<{ deliveries: Delivery[]; cutOff: Set<number> }> {
  outage.begin();
  const answered = w.addIssues(4).map((n) => w.issueOpened(n));
  for (const d of answered) await w.deliver(d, replica);
  expect(
    answered.map((d) => d.spooled),
    answered.map((d) => d.answers.join(' | ')).join('\n'),
  ).toEqual(answered.map(() => true));
  const inFlight = w.addIssues(4).map((n) => w.issueOpened(n));
  const sending = inFlight.map(async (d, i) => {
    await faultDelay(i * rnd.int(0, 300));
    await w.deliver(d, replica);
  });
  await faultDelay(rnd.int(0, 1000));
  await w.kill(replica);
  await Promise.all(sending);
  await w.start(replica);
  outage.end();
  await w.ready(replica, Date.now());
  // Sent to a dead replica (no answer) or never sent: the forge knows it failed; either way is fine.
  const cutOff = new Set(inFlight.filter((d) => d.accepted === undefined).map((d) => d.number));
  return { deliveries: [...answered, ...inFlight], cutOff };
}

function refusedCount(metrics: string): number {
  return [...metrics.matchAll(/^baton_ingress_refused_total(?:\{[^}]*\})? (\d+)/gm)].reduce((n, m) => n + Number(m[1]), 0);
}

describe('chaos: database cuts, stalls and flaps during a storm', () => {
  it(
    'on PostgreSQL with two replicas, each delivery sent once: all answered 2xx but for a full spool disk, each one finished run, none lost after a kill -9 with a spool',
    async (ctx) => {
      assertBuilt();
      if (!(await postgresAvailable())) ctx.skip();
      disk = mountSmallDisk(SPOOL_DISK_MB, "the database-cuts scenario's full spool disk");
      const rnd = chaosRandom('database cuts');
      const spoolDisk = disk;
      world = await createWorld({
        name: 'dbcut',
        database: 'postgres',
        replicas: 2,
        databaseProxy: true,
        spoolDir: (i) => (i === 0 && spoolDisk ? path.join(spoolDisk.dir, 'spool') : undefined),
      });
      for (let i = 0; i < 2; i++) await world.start(i);
      for (let i = 0; i < 2; i++) await world.ready(i, Date.now());
      const figures: Figures = { faults: [], answerMs: [] };
      const fullWindows: Array<{ from: number; to: number }> = [];
      const deliveries: Delivery[] = [];
      const startedAt = Date.now();
      for (let round = 0; moreRounds(startedAt, round); round++) deliveries.push(...(await stormRound(world, rnd, figures)));
      await spoolsDrained(world);
      if (disk) deliveries.push(...(await fullSpoolDisk(world, disk, fullWindows)));
      const proxy = world.proxy!;
      const killed = await killWithSpool(world, rnd, 1, { begin: () => proxy.cut(), end: () => proxy.restore() });
      deliveries.push(...killed.deliveries);

      // Everything not answered 2xx: only 503s of replica 0 while its spool disk was full, and
      // what the kill cut off.
      const fullAt = (d: Delivery) =>
        d.last!.replica === 0 && fullWindows.some((w) => d.last!.sentAt <= w.to && d.last!.answeredAt >= w.from);
      const refused = deliveries.filter((d) => d.accepted === undefined && !killed.cutOff.has(d.number));
      const unexplained = refused.filter((d) => !(d.last?.status === 503 && fullAt(d)));
      expect(
        unexplained.map((d) => `#${d.number} to replica ${d.last?.replica}: ${d.answers.join(' | ') || 'never sent'}`),
        'deliveries not answered 2xx outside a full spool disk',
      ).toEqual([]);
      const refusedMetric = await world.apiOf(0, '/metrics');
      expect(refusedCount(refusedMetric?.text ?? '')).toBe(refused.length);

      await spoolsDrained(world);
      const settled = await expectSettled(world, deliveries, {
        since: Date.now(),
        maybe: [...refused.map((d) => d.number), ...killed.cutOff],
      });
      const sorted = [...figures.answerMs].sort((a, b) => a - b);
      printFigures('database cuts, PostgreSQL, 2 replicas, each delivery once', {
        seed: rnd.seed,
        events: deliveries.length,
        'answered 2xx': deliveries.filter((d) => d.accepted !== undefined).length,
        spooled: deliveries.filter((d) => d.spooled).length,
        '503 with the spool disk full': refused.length,
        'cut off by the kill -9': killed.cutOff.size,
        faults: figures.faults.join(', '),
        'storm answer ms (median/max)': `${sorted[Math.floor(sorted.length / 2)] ?? 0}/${sorted.at(-1) ?? 0}`,
        'connections refused during cuts': world.proxy!.refused,
        'runs re-provisioned': settled.runs.filter((r) => r.attempts > 1).length,
        'drain ms': settled.drainMs,
        'clean ms': settled.cleanMs,
      });
    },
    chaosTimeout(600_000),
  );

  it(
    "on SQLite with the database's disk full: deliveries go to the spool, and a kill -9 with a spool loses none",
    async (ctx) => {
      assertBuilt();
      disk = mountSmallDisk(16, "the database-cuts scenario's full SQLite disk");
      if (!disk) return ctx.skip();
      const dbDisk = disk;
      const rnd = chaosRandom('database disk full, SQLite');
      world = await createWorld({
        name: 'dbfull-sqlite',
        database: 'sqlite',
        sqliteFile: path.join(dbDisk.dir, 'baton.db'),
        // /ready's floor of free space, below the small disk's size (full, it fails /ready: meant).
        env: { BATON_MIN_FREE_SPACE_MB: '1' },
      });
      await world.start(0);
      await world.ready(0, Date.now());
      // Runs under way when the disk fills: their callbacks wait for it too.
      const before = world.addIssues(3).map((n) => world!.issueOpened(n));
      for (const d of before) await world.deliver(d, 0);
      const killed = await killWithSpool(world, rnd, 0, { begin: () => dbDisk.fill(), end: () => dbDisk.free() });
      const deliveries = [...before, ...killed.deliveries];
      const unexplained = deliveries.filter((d) => d.accepted === undefined && !killed.cutOff.has(d.number));
      expect(unexplained.map((d) => `#${d.number}: ${d.answers.join(' | ')}`)).toEqual([]);
      await spoolsDrained(world);
      const settled = await expectSettled(world, deliveries, { since: Date.now(), maybe: killed.cutOff });
      printFigures('database disk full + kill -9, SQLite', {
        seed: rnd.seed,
        events: deliveries.length,
        spooled: deliveries.filter((d) => d.spooled).length,
        'cut off by the kill -9': killed.cutOff.size,
        'runs re-provisioned': settled.runs.filter((r) => r.attempts > 1).length,
        'drain ms': settled.drainMs,
      });
    },
    chaosTimeout(300_000),
  );
});
