import { sql } from 'kysely';
import type { Store } from '../store/index.js';
import { readConversation, readTranscript } from './conversation.js';
import { branchNamesIssue, buildIssueView } from './issue-view.js';
import { parseJson, toRun, toRunEvent } from './rows.js';
import { COUNTED_STATUSES, LIVE_STATUSES, RUN_STATUS, type CountedStatus, type RunStatus } from './states.js';
import type { QueueOverview, QueueStats, RunFilter, RunQueries, StageCounts } from './types.js';
import { finishedTotals } from './today-totals.js';
import { buildUsageReport, usageBounds } from './usage-report.js';
import { startOfUtcDay } from './usage.js';

/** Largest page `list` returns, whatever the filter asks. */
const MAX_LIST = 500;
/** Most runs the issue view reads per query; an issue with more is not a pipeline that works. */
const MAX_ISSUE_RUNS = 1000;

/**
 * Every read of runs and run events, for the engine, the HTTP routes, the live stream and the
 * metrics alike: one place to look for a query, its index and its cost.
 */
export function createRunQueries(options: { store: Pick<Store, 'db' | 'dialect'>; concurrency: number }): RunQueries {
  const { db } = options.store;

  async function isPaused(): Promise<boolean> {
    const row = await db.selectFrom('dispatch_state').select('paused').where('id', '=', 1).executeTakeFirst();
    return row?.paused === 1;
  }

  function statsFrom(count: (status: CountedStatus) => number, paused: boolean): QueueStats {
    return {
      queued: count('queued'),
      held: count('held'),
      provisioning: count('provisioning'),
      running: count('running'),
      dead: count('dead'),
      failed: count('failed'),
      paused,
      concurrency: options.concurrency,
    };
  }

  const queries: RunQueries = {
    async get(runId) {
      const row = await db.selectFrom('runs').selectAll().where('id', '=', runId).executeTakeFirst();
      return row ? toRun(row) : null;
    },

    async getMany(runIds) {
      const ids = [...new Set(runIds)];
      if (ids.length === 0) return new Map();
      const rows = await db.selectFrom('runs').selectAll().where('id', 'in', ids).execute();
      return new Map(rows.map((row) => [row.id, toRun(row)]));
    },

    async findByWorkspace(workspaceName) {
      const row = await db
        .selectFrom('runs')
        .selectAll()
        .where('workspace_name', '=', workspaceName)
        .orderBy('id', 'desc')
        .limit(1)
        .executeTakeFirst();
      return row ? toRun(row) : null;
    },

    async list(filter: RunFilter = {}) {
      // Keyset pagination on the primary key: a page is `id < cursor ORDER BY id DESC LIMIT n`,
      // as cheap on page 2,000 as on page 1, and stable while runs are added (an OFFSET page
      // shifts by every run queued since the first). The indexes behind each filter are in
      // migration 0120 (stage, repository) and 0001 (status); bench/runs-list.ts measures them.
      let query = db.selectFrom('runs').selectAll();
      if (filter.status) query = query.where('status', 'in', Array.isArray(filter.status) ? filter.status : [filter.status]);
      if (filter.stage) query = query.where('stage', '=', filter.stage);
      if (filter.owner) query = query.where('owner', '=', filter.owner);
      if (filter.repo) query = query.where('repo', '=', filter.repo);
      if (filter.number !== undefined) query = query.where('number', '=', filter.number);
      if (filter.since !== undefined) query = query.where('created_at', '>=', filter.since);
      if (filter.until !== undefined) query = query.where('created_at', '<', filter.until);
      if (filter.text) {
        const pattern = `%${filter.text.replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`;
        // SQLite's LIKE ignores ASCII case already; PostgreSQL's needs ILIKE.
        const postgres = options.store.dialect === 'postgres';
        const like = sql.raw(postgres ? 'ILIKE' : 'LIKE');
        const title = postgres ? sql`(payload::jsonb ->> 'title')` : sql`json_extract(payload, '$.title')`;
        query = query.where(({ or }) =>
          or([
            sql<boolean>`${title} ${like} ${pattern} ESCAPE '\\'`,
            sql<boolean>`last_error ${like} ${pattern} ESCAPE '\\'`,
            sql<boolean>`summary ${like} ${pattern} ESCAPE '\\'`,
          ]),
        );
      }
      if (filter.beforeId !== undefined) query = query.where('id', '<', filter.beforeId);
      const rows = await query
        .orderBy('id', 'desc')
        .limit(Math.min(filter.limit ?? 50, MAX_LIST))
        .execute();
      return rows.map(toRun);
    },

    async listLive() {
      const rows = await db.selectFrom('runs').selectAll().where('status', 'in', LIVE_STATUSES).orderBy('id').execute();
      return rows.map(toRun);
    },

    async events(runId) {
      const rows = await db.selectFrom('run_events').selectAll().where('run_id', '=', runId).orderBy('id').execute();
      return rows.map(toRunEvent);
    },

    async eventsSince(afterId, limit = 1000) {
      const rows = await db.selectFrom('run_events').selectAll().where('id', '>', afterId).orderBy('id').limit(limit).execute();
      return rows.map(toRunEvent);
    },

    async lastEventId() {
      const row = await db
        .selectFrom('run_events')
        .select(({ fn }) => fn.max('id').as('max'))
        .executeTakeFirst();
      return Number(row?.max ?? 0);
    },

    async nextDelayedRunAt(now) {
      const row = await db
        .selectFrom('runs')
        .select(({ fn }) => fn.min('run_at').as('at'))
        .where('status', '=', RUN_STATUS.queued)
        .where('run_at', '>', now)
        .executeTakeFirst();
      return row?.at === null || row?.at === undefined ? null : Number(row.at);
    },

    isPaused,

    conversation: (runId) => readConversation(db, runId),
    transcript: (runId) => readTranscript(db, runId),

    async issue(issue, now) {
      const { owner, repo, number } = issue;
      const ofRepository = db.selectFrom('runs').selectAll().where('owner', '=', owner).where('repo', '=', repo);
      const own = await ofRepository.where('number', '=', number).orderBy('id').limit(MAX_ISSUE_RUNS).execute();
      // Pull requests are linked by their head branch (see issue-view.ts). The LIKE only narrows
      // the rows read (the number is a whole number, so the pattern holds no wildcard of its
      // own); the branch rule decides.
      const candidates = await ofRepository
        .where('number', 'is not', null)
        .where('number', '!=', number)
        .where('payload', 'like', `%issue-${number}%`)
        .orderBy('id')
        .limit(MAX_ISSUE_RUNS)
        .execute();
      const pulls = new Set<number>();
      for (const row of candidates) {
        const headRef = parseJson<{ headRef?: unknown }>(row.payload)?.headRef;
        if (typeof headRef === 'string' && branchNamesIssue(headRef, number)) pulls.add(row.number!);
      }
      const pullRuns =
        pulls.size === 0
          ? []
          : await ofRepository
              .where('number', 'in', [...pulls])
              .orderBy('id')
              .limit(MAX_ISSUE_RUNS)
              .execute();
      if (own.length === 0 && pullRuns.length === 0) return null;
      return buildIssueView(issue, [...own, ...pullRuns].map(toRun), now);
    },

    async usage(query) {
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
    },

    async stats() {
      const [rows, paused] = await Promise.all([
        db
          .selectFrom('runs')
          .select(['status', ({ fn }) => fn.countAll<number>().as('n')])
          .where('status', 'in', COUNTED_STATUSES)
          .groupBy('status')
          .execute(),
        isPaused(),
      ]);
      return statsFrom((status) => Number(rows.find((r) => r.status === status)?.n ?? 0), paused);
    },

    async summary(now) {
      return (await queries.overview(now)).summary;
    },

    async overview(now): Promise<QueueOverview> {
      const since = startOfUtcDay(now);
      const [rows, paused, today] = await Promise.all([
        db
          .selectFrom('runs')
          .select(['stage', 'status', ({ fn }) => fn.countAll<number>().as('n')])
          .groupBy(['stage', 'status'])
          .execute(),
        isPaused(),
        finishedTotals(db, options.store.dialect, since),
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
          ...statsFrom((status) => totals.get(status) ?? 0, paused),
          stages,
          today: { since, ...today },
        },
      };
    },
  };
  return queries;
}
