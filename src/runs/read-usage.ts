import type { Kysely } from 'kysely';
import type { Database } from '../store/index.js';
import { parseJson } from './rows.js';
import { buildUsageReport, usageBounds, type UsageQuery, type UsageReport } from './usage-report.js';

/** Tokens and cost of the runs that finished in a range of UTC days, grouped one way (`RunQueries.usage`). */
export async function readUsage(db: Kysely<Database>, query: UsageQuery): Promise<UsageReport> {
  const { since, until } = usageBounds(query);
  // Summed here rather than in SQL: usage is JSON text, read alike by both databases, and an
  // agent's odd value (a string where a count belongs) counts as 0 instead of failing a cast.
  const rows = await db
    .selectFrom('runs')
    .select(['stage', 'owner', 'repo', 'number', 'finished_at', 'usage', 'cost_usd'])
    .where('finished_at', '>=', since)
    .where('finished_at', '<', until)
    .execute();
  return buildUsageReport(
    query,
    rows.map((row) => ({
      stage: row.stage,
      owner: row.owner,
      repo: row.repo,
      number: row.number,
      finishedAt: Number(row.finished_at),
      usage: parseJson(row.usage),
      costUsd: row.cost_usd === null ? null : Number(row.cost_usd),
    })),
  );
}
