import { CompiledQuery, type KyselyPlugin, type RootOperationNode, type UnknownRow } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRunQueries, type RunFilter } from '../../src/runs/index.js';
import { createSqliteTestStore, type TestStore } from '../helpers/stores.js';

/**
 * The reads behind the dashboard's pages use the indexes made for them, on SQLite, where the plan
 * does not depend on table statistics: an empty table plans as a full one. bench/runs-list.ts
 * measures what each costs with 100,000 runs (without the counts index, 0.45 s a stats call).
 * The queries are the real ones: a plugin records what `createRunQueries` sends, and the test
 * asks SQLite how it would run each.
 */
describe('the runs list and the queue counts read indexes (SQLite plans)', () => {
  let t: TestStore;
  let sent: CompiledQuery[];
  let queries: ReturnType<typeof createRunQueries>;

  beforeEach(async () => {
    t = await createSqliteTestStore();
    await t.store.migrate();
    sent = [];
    const executor = t.store.db.getExecutor();
    const record: KyselyPlugin = {
      transformQuery(args) {
        sent.push(executor.compileQuery(args.node as RootOperationNode, args.queryId));
        return args.node;
      },
      transformResult: async (args) => args.result as { rows: UnknownRow[] },
    };
    queries = createRunQueries({ store: { db: t.store.db.withPlugin(record), dialect: t.store.dialect }, concurrency: 1 });
  });
  afterEach(async () => {
    await t?.cleanup();
  });

  /** SQLite's plan of each query sent to `runs` by `read`, one line of details per query. */
  async function plansOf(read: () => Promise<unknown>): Promise<string[]> {
    sent = [];
    await read();
    const plans: string[] = [];
    for (const query of sent.filter((q) => /\bfrom "runs"/.test(q.sql))) {
      const { rows } = await t.store.db.executeQuery<{ detail: string }>(
        CompiledQuery.raw(`EXPLAIN QUERY PLAN ${query.sql}`, [...query.parameters]),
      );
      plans.push(rows.map((row) => row.detail).join('; '));
    }
    return plans;
  }

  it('counts runs by stage and status from an index alone', async () => {
    const plans = await plansOf(() => queries.summary(Date.now()));
    expect(plans).toContainEqual(expect.stringContaining('USING COVERING INDEX runs_stage_status'));
    expect(plans.join('\n')).not.toMatch(/SCAN runs(?! USING)/);
  });

  it.each<[string, RunFilter, string]>([
    // Several statuses are several ranges of the index: SQLite sorts what they hold (`failing`, 11%
    // of the runs in the bench, costs 7 ms a page there).
    ['a status', { status: ['failed'] }, 'runs_status'],
    ['a stage', { stage: 'develop' }, 'runs_stage'],
    ['a repository', { owner: 'acme', repo: 'app' }, 'runs_repository'],
    ['an issue', { owner: 'acme', repo: 'app', number: 7 }, 'runs_issue'],
  ])('pages runs of %s from its index, newest first, without sorting', async (_, filter, index) => {
    const [plan] = await plansOf(() => queries.list({ ...filter, beforeId: 1_000, limit: 51 }));
    expect(plan).toContain(`USING INDEX ${index}`);
    expect(plan).not.toContain('TEMP B-TREE FOR ORDER BY');
  });
});
