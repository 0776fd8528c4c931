import { Queue, Worker } from 'bullmq';
import type { PeerEnvironment, QueuePeer } from './types.js';

const QUEUE = 'noop';

/** BullMQ 5 with its defaults (completed jobs kept), under a key prefix unique to this run. */
export function createBullmqPeer(env: PeerEnvironment): QueuePeer {
  const prefix = `baton-bench-${env.runId}`;
  const url = new URL(env.redisUrl);
  const connection = {
    host: url.hostname,
    port: Number(url.port || 6379),
    db: Number(url.pathname.slice(1) || 0),
    // Workers block on Redis; BullMQ requires unlimited retries for their connection.
    maxRetriesPerRequest: null,
  };
  let queue: Queue | undefined;
  let worker: Worker | undefined;
  let version: string | undefined;

  return {
    name: 'bullmq',
    store: 'Redis',
    get version() {
      return version;
    },
    notes: `BullMQ 5, key prefix "${prefix}", queue.add() per job, Worker({ concurrency }) in-process`,

    async setup() {
      queue = new Queue(QUEUE, { connection, prefix });
      queue.on('error', () => {});
      await queue.waitUntilReady();
      const info = await (await queue.client).info();
      version = /redis_version:(\S+)/.exec(info)?.[1];
    },

    async enqueue(seq) {
      await queue!.add('noop', { seq });
    },

    async startWorker(concurrency, hooks) {
      worker = new Worker<{ seq: number }>(
        QUEUE,
        async (job) => {
          hooks.claimed(Number(job.data.seq));
        },
        { connection, prefix, concurrency },
      );
      worker.on('completed', () => hooks.completed());
      worker.on('failed', (_job, err) => hooks.error(err));
      worker.on('error', (err) => hooks.error(err));
      await worker.waitUntilReady();
    },

    async purge() {
      await queue!.drain();
    },

    async stopWorker() {
      await worker?.close();
      worker = undefined;
    },

    async teardown() {
      await worker?.close();
      worker = undefined;
      if (!queue) return;
      await queue.obliterate({ force: true });
      // Belt and braces: nothing under our prefix may outlive the bench.
      const client = await queue.client;
      let cursor = '0';
      do {
        const [nextCursor, keys] = await client.scan(cursor, { MATCH: `${prefix}:*`, COUNT: 1000 });
        if (keys.length > 0) await client.del(...keys);
        cursor = nextCursor;
      } while (cursor !== '0');
      await queue.close();
      queue = undefined;
    },
  };
}
