import { sql, type Kysely } from 'kysely';
import type { Database, StoreDialect } from '../store/index.js';

export interface FinishedTotals {
  finished: number;
  succeeded: number;
  /** Input + output tokens, each field counted as `totalTokens` counts it. */
  tokens: number;
  costUsd: number;
}

/**
 * A usage field as `totalTokens` (usage.ts) counts it, in SQL: a positive number, else 0 (a
 * string, a negative, a missing field, usage that is no object). The runs column holds what
 * baton wrote with JSON.stringify, so it parses; the CASE is nested because neither database
 * promises to stop at the first false operand of an AND.
 */
function usageField(dialect: StoreDialect, field: 'inputTokens' | 'outputTokens') {
  if (dialect === 'postgres') {
    return sql`CASE WHEN jsonb_typeof(usage::jsonb -> ${sql.lit(field)}) = 'number' THEN GREATEST((usage::jsonb ->> ${sql.lit(field)})::numeric, 0) ELSE 0 END`;
  }
  const path = sql.lit(`$.${field}`);
  return sql`CASE WHEN json_valid(usage) THEN (CASE WHEN json_type(usage, ${path}) IN ('integer', 'real') THEN MAX(json_extract(usage, ${path}), 0) ELSE 0 END) ELSE 0 END`;
}

/**
 * How many runs finished since `since`, how many of them succeeded, and their tokens and cost:
 * the queue summary's "today". Summed by the database: a busy server finishes thousands of runs a
 * day, and reading each one's usage into JavaScript on every dashboard page was most of the
 * summary's time (bench/runs-list.ts).
 */
export async function finishedTotals(db: Kysely<Database>, dialect: StoreDialect, since: number): Promise<FinishedTotals> {
  const tokens = sql`${usageField(dialect, 'inputTokens')} + ${usageField(dialect, 'outputTokens')}`;
  const row = await db
    .selectFrom('runs')
    .select([
      sql<number | string>`COUNT(*)`.as('finished'),
      sql<number | string | null>`SUM(CASE WHEN status = 'succeeded' THEN 1 ELSE 0 END)`.as('succeeded'),
      sql<number | string | null>`SUM(${tokens})`.as('tokens'),
      sql<number | string | null>`SUM(cost_usd)`.as('cost'),
    ])
    .where('finished_at', '>=', since)
    .where('finished_at', 'is not', null)
    .executeTakeFirstOrThrow();
  return {
    finished: Number(row.finished),
    succeeded: Number(row.succeeded ?? 0),
    tokens: Number(row.tokens ?? 0),
    costUsd: Math.round(Number(row.cost ?? 0) * 1e6) / 1e6,
  };
}
