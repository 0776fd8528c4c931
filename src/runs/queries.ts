import type { Store } from '../store/index.js';
import { readConversation, readTranscript } from './conversation.js';
import { listRuns } from './list-runs.js';
import { isPaused, readOverview, readStats } from './queue-overview.js';
import { readIssueView } from './read-issue-view.js';
import { readUsage } from './read-usage.js';
import { toRun, toRunEvent } from './rows.js';
import { LIVE_STATUSES, RUN_STATUS } from './states.js';
import type { RunQueries } from './types.js';

/**
 * Every read of runs and run events, for the HTTP routes, the dispatcher, the live stream and the
 * metrics alike: one place to look for a query, its index and its cost. The short ones are here;
 * each longer one is a file of its own (list-runs.ts, read-issue-view.ts, read-usage.ts,
 * queue-overview.ts, conversation.ts).
 */
export function createRunQueries(options: { store: Pick<Store, 'db' | 'dialect'>; concurrency: number }): RunQueries {
  const { db } = options.store;

  return {
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

    list: (filter) => listRuns(db, options.store.dialect, filter),
    issue: (issue, now) => readIssueView(db, issue, now),
    usage: (query) => readUsage(db, query),

    conversation: (runId) => readConversation(db, runId),
    transcript: (runId) => readTranscript(db, runId),

    isPaused: () => isPaused(db),
    stats: () => readStats(db, options.concurrency),
    summary: async (now) => (await readOverview(db, options.store.dialect, options.concurrency, now)).summary,
    overview: (now) => readOverview(db, options.store.dialect, options.concurrency, now),
  };
}
