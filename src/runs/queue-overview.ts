import type { Kysely } from 'kysely';
import type { Database, StoreDialect } from '../store/index.js';
import { COUNTED_STATUSES, type CountedStatus, type RunStatus } from './states.js';
import { finishedTotals } from './today-totals.js';
import type { QueueOverview, QueueStats, StageCounts } from './types.js';
import { startOfUtcDay } from './usage.js';

/** Whether claiming is paused (`dispatch_state`, one row). */
export async function isPaused(db: Kysely<Database>): Promise<boolean> {
  const row = await db.selectFrom('dispatch_state').select('paused').where('id', '=', 1).executeTakeFirst();
  return row?.paused === 1;
}

function statsFrom(count: (status: CountedStatus) => number, paused: boolean, concurrency: number): QueueStats {
  return {
    queued: count('queued'),
    held: count('held'),
    provisioning: count('provisioning'),
    running: count('running'),
    dead: count('dead'),
    failed: count('failed'),
    paused,
    concurrency,
  };
}

/** The counted statuses' totals (`RunQueries.stats`). */
export async function readStats(db: Kysely<Database>, concurrency: number): Promise<QueueStats> {
  const [rows, paused] = await Promise.all([
    db
      .selectFrom('runs')
      .select(['status', ({ fn }) => fn.countAll<number>().as('n')])
      .where('status', 'in', COUNTED_STATUSES)
      .groupBy('status')
      .execute(),
    isPaused(db),
  ]);
  return statsFrom((status) => Number(rows.find((r) => r.status === status)?.n ?? 0), paused, concurrency);
}

/** The queue summary and the run counts per stage and status behind it, in three queries (`RunQueries.overview`). */
export async function readOverview(db: Kysely<Database>, dialect: StoreDialect, concurrency: number, now: number): Promise<QueueOverview> {
  const since = startOfUtcDay(now);
  const [rows, paused, today] = await Promise.all([
    db
      .selectFrom('runs')
      .select(['stage', 'status', ({ fn }) => fn.countAll<number>().as('n')])
      .groupBy(['stage', 'status'])
      .execute(),
    isPaused(db),
    finishedTotals(db, dialect, since),
  ]);
  const counts = rows.map((r) => ({ stage: r.stage, status: r.status as RunStatus, count: Number(r.n) }));
  const totals = new Map<string, number>();
  const stages: Record<string, StageCounts> = {};
  for (const { stage, status, count } of counts) {
    if (!(COUNTED_STATUSES as readonly string[]).includes(status)) continue;
    totals.set(status, (totals.get(status) ?? 0) + count);
    const perStage = (stages[stage] ??= { queued: 0, held: 0, provisioning: 0, running: 0, dead: 0, failed: 0 });
    perStage[status as CountedStatus] = count;
  }
  return {
    counts,
    summary: {
      ...statsFrom((status) => totals.get(status) ?? 0, paused, concurrency),
      stages,
      today: { since, ...today },
    },
  };
}
