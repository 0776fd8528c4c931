import type { FullRunEngine, QueueStats } from '../runs/index.js';
import type { Store } from '../store/index.js';

export interface StageCounts {
  queued: number;
  provisioning: number;
  running: number;
  dead: number;
  failed: number;
}

export interface QueueSummary extends QueueStats {
  /** Live and stuck runs per stage. */
  stages: Record<string, StageCounts>;
  /** Runs finished since 00:00 UTC today, with their usage. */
  today: { since: number; finished: number; succeeded: number; tokens: number; costUsd: number };
}

const COUNTED = ['queued', 'provisioning', 'running', 'dead', 'failed'] as const;

export function startOfUtcDay(t: number): number {
  const d = new Date(t);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
}

/** Queue statistics for `GET /api/queue/stats`, the dashboard summary and `baton queue stats`. */
export async function queueSummary(engine: FullRunEngine, store: Store, now: number): Promise<QueueSummary> {
  const since = startOfUtcDay(now);
  const [stats, perStage, today] = await Promise.all([
    engine.stats(),
    store.db
      .selectFrom('runs')
      .select(['stage', 'status', ({ fn }) => fn.countAll<number>().as('n')])
      .where('status', 'in', COUNTED)
      .groupBy(['stage', 'status'])
      .execute(),
    store.db.selectFrom('runs').select(['status', 'usage', 'cost_usd']).where('finished_at', '>=', since).execute(),
  ]);
  const stages: Record<string, StageCounts> = {};
  for (const row of perStage) {
    const counts = (stages[row.stage] ??= { queued: 0, provisioning: 0, running: 0, dead: 0, failed: 0 });
    counts[row.status as keyof StageCounts] = Number(row.n);
  }
  let tokens = 0;
  let costUsd = 0;
  for (const row of today) {
    costUsd += Number(row.cost_usd ?? 0);
    tokens += usageTokens(row.usage);
  }
  return {
    ...stats,
    stages,
    today: {
      since,
      finished: today.length,
      succeeded: today.filter((r) => r.status === 'succeeded').length,
      tokens,
      costUsd: Math.round(costUsd * 1e6) / 1e6,
    },
  };
}

function usageTokens(text: string | null): number {
  if (!text) return 0;
  try {
    const usage = JSON.parse(text) as Record<string, unknown>;
    const n = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
    return n(usage.inputTokens) + n(usage.outputTokens);
  } catch {
    return 0;
  }
}
