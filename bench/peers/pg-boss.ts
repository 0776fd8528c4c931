import PgBoss from 'pg-boss';
import pg from 'pg';
import { dropSchema } from './postgres-schema.js';
import type { PeerEnvironment, QueuePeer } from './types.js';

const QUEUE = 'noop';
/** pg-boss 10 refuses to poll more often than every 500 ms. */
const POLLING_INTERVAL_SECONDS = 0.5;

/**
 * pg-boss 10 has no per-job concurrency: `work()` is a polling loop that fetches up to `batchSize`
 * jobs and hands them over together. Concurrency N is N such loops.
 */
export function createPgBossPeer(env: PeerEnvironment & { batchSize: number }): QueuePeer {
  const schema = `bench_pgboss_${env.runId}`;
  let boss: PgBoss | undefined;
  let counter: pg.Pool | undefined;
  let workerIds: string[] = [];
  let completionPoll: NodeJS.Timeout | undefined;

  return {
    name: 'pg-boss',
    store: 'PostgreSQL',
    notes:
      `pg-boss 10, schema ${schema}, send() per job; worker = N work() loops, batchSize ${env.batchSize}, ` +
      `polling ${POLLING_INTERVAL_SECONDS * 1000} ms (its minimum); completions counted by polling its job table every 20 ms`,

    async setup() {
      boss = new PgBoss({ connectionString: env.pgUrl, schema, max: 10, supervise: false, schedule: false });
      boss.on('error', () => {});
      await boss.start();
      await boss.createQueue(QUEUE);
      counter = new pg.Pool({ connectionString: env.pgUrl, max: 1 });
      counter.on('error', () => {});
    },

    async enqueue(seq) {
      await boss!.send(QUEUE, { seq });
    },

    async startWorker(concurrency, hooks) {
      const options = { batchSize: env.batchSize, pollingIntervalSeconds: POLLING_INTERVAL_SECONDS };
      workerIds = [];
      for (let i = 0; i < concurrency; i++) {
        workerIds.push(
          await boss!.work<{ seq: number }>(QUEUE, options, async (jobs) => {
            for (const job of jobs) hooks.claimed(Number(job.data.seq));
          }),
        );
      }
      // pg-boss completes a batch after the handler returns, without telling anyone: count rows.
      let reported = await countCompleted();
      let polling = false;
      completionPoll = setInterval(() => {
        if (polling) return;
        polling = true;
        countCompleted()
          .then((n) => {
            if (n > reported) hooks.completed(n - reported);
            reported = n;
          }, hooks.error)
          .finally(() => (polling = false));
      }, 20);
    },

    async purge() {
      await counter!.query(`DELETE FROM ${schema}.job WHERE name = $1 AND state = 'created'`, [QUEUE]);
    },

    async stopWorker() {
      clearInterval(completionPoll);
      for (const id of workerIds) await boss!.offWork({ id });
      workerIds = [];
    },

    async teardown() {
      clearInterval(completionPoll);
      await boss?.stop({ graceful: true, wait: true, timeout: 5_000 });
      boss = undefined;
      await counter?.end();
      counter = undefined;
      await dropSchema(env.pgUrl, schema);
    },
  };

  async function countCompleted(): Promise<number> {
    const { rows } = await counter!.query<{ n: string }>(
      `SELECT count(*) AS n FROM ${schema}.job WHERE name = $1 AND state = 'completed'`,
      [QUEUE],
    );
    return Number(rows[0]?.n ?? 0);
  }
}
