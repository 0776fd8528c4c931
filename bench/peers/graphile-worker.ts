import { Logger, makeWorkerUtils, run, type Runner, type WorkerUtils } from 'graphile-worker';
import pg from 'pg';
import { createSchema, dropSchema } from './postgres-schema.js';
import type { PeerEnvironment, QueuePeer } from './types.js';

/** graphile-worker 0.16 with its defaults (LISTEN on jobs:insert, 2 s fallback poll), silenced. */
export function createGraphileWorkerPeer(env: PeerEnvironment): QueuePeer {
  const schema = `bench_gw_${env.runId}`;
  const silent = new Logger(() => () => {});
  let pool: pg.Pool | undefined;
  let utils: WorkerUtils | undefined;
  let runner: Runner | undefined;

  return {
    name: 'graphile-worker',
    store: 'PostgreSQL',
    notes: `graphile-worker 0.16, schema ${schema}, one pg pool of 10, addJob() per job, run({ concurrency }) in-process`,

    async setup() {
      await createSchema(env.pgUrl, schema);
      pool = new pg.Pool({ connectionString: env.pgUrl, max: 10 });
      pool.on('error', () => {});
      utils = await makeWorkerUtils({ pgPool: pool, schema, logger: silent });
      await utils.migrate();
    },

    async enqueue(seq) {
      await utils!.addJob('noop', { seq });
    },

    async startWorker(concurrency, hooks) {
      runner = await run({
        pgPool: pool,
        schema,
        concurrency,
        logger: silent,
        noHandleSignals: true,
        taskList: {
          noop: async (payload) => {
            hooks.claimed(Number((payload as { seq: number }).seq));
          },
        },
      });
      runner.events.on('job:complete', ({ error }) => (error ? hooks.error(error) : hooks.completed()));
      runner.events.on('pool:listen:error', ({ error }) => hooks.error(error));
    },

    async purge() {
      await pool!.query(`DELETE FROM ${schema}._private_jobs WHERE locked_at IS NULL`);
    },

    async stopWorker() {
      await runner?.stop();
      runner = undefined;
    },

    async teardown() {
      await runner?.stop();
      runner = undefined;
      await utils?.release();
      utils = undefined;
      await pool?.end();
      pool = undefined;
      await dropSchema(env.pgUrl, schema);
    },
  };
}
