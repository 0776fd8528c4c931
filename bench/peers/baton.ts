import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { QueueConfig } from '../../src/runs/index.js';
import type { ForgeClient } from '../../src/forge/index.js';
import { createOutbox, createStatusCommentHook } from '../../src/outbox/index.js';
import { createRunEngine, NOTIFY_CHANNEL, type ClaimedRun, type RunService, type TransitionHook } from '../../src/runs/index.js';
import { createStore, type Store } from '../../src/store/index.js';
import { createSchema, dropSchema } from './postgres-schema.js';
import type { PeerEnvironment, QueuePeer, WorkerHooks } from './types.js';

export type BatonPeerOptions =
  | { name: string; kind: 'sqlite'; synchronous: 'NORMAL' | 'FULL' }
  /**
   * `replicas: 2` puts the worker on its own store and engine, as a second replica would be: it
   * hears enqueues only through PostgreSQL NOTIFY, never through the producer's in-process signal.
   */
  | {
      name: string;
      kind: 'postgres';
      replicas: 1 | 2;
      /**
       * With the hook production always has: each transition that says something on the issue
       * (queued, started, ended) writes its status comment into the outbox in its own transaction.
       * Nothing is posted: the outbox has no worker here.
       */
      comments?: boolean;
    };

/** Fallback poll of the claim loop, as the dispatcher's `queue.pollMs`; wake-ups should make it idle. */
const FALLBACK_POLL_MS = 5_000;

export function createBatonPeer(options: BatonPeerOptions, env: PeerEnvironment & { concurrency: number }): QueuePeer {
  const queue: QueueConfig = {
    concurrency: env.concurrency,
    perRepositoryConcurrency: 0,
    maxAttempts: 3,
    backoffBaseMs: 5_000,
    backoffMaxMs: 300_000,
    leaseMs: 60_000,
    pollMs: FALLBACK_POLL_MS,
    retentionDays: 30,
  };
  const schema = `bench_baton_${env.runId}_${options.name.replace(/\W/g, '_')}`;
  let dir: string | undefined;
  let producerStore: Store | undefined;
  let workerStore: Store | undefined;
  let producer: RunService | undefined;
  let worker: ClaimLoop | undefined;

  const openStore = (): Store =>
    options.kind === 'sqlite'
      ? createStore({ url: `sqlite:${path.join(dir!, 'baton.db')}`, sqliteSynchronous: options.synchronous })
      : createStore({ url: env.pgUrl, schema, poolSize: 10 });

  return {
    name: options.name,
    store:
      options.kind === 'sqlite'
        ? `SQLite file, WAL, synchronous=${options.synchronous}`
        : options.replicas === 2
          ? 'PostgreSQL, worker = 2nd replica'
          : options.comments
            ? 'PostgreSQL, status comments (outbox)'
            : 'PostgreSQL, worker in-process',
    notes:
      options.kind === 'sqlite'
        ? `run engine on a SQLite file in a temp dir; worker = claim loop on the engine's queue:wake signal; queue.concurrency ${env.concurrency}`
        : options.replicas === 1
          ? `run engine, schema ${schema}, pool 10; worker = claim loop on the same engine's in-process queue:wake signal` +
            (options.comments ? `; serve's status-comment hook writes each queued/started/ended comment into the outbox` : '')
          : `producer and worker are separate stores+engines (pool 10 each) in one process; the worker wakes only on LISTEN "${NOTIFY_CHANNEL}"`,

    async setup() {
      if (options.kind === 'sqlite') {
        dir = fs.mkdtempSync(path.join(os.tmpdir(), `baton-bench-${env.runId}-`));
      } else {
        await createSchema(env.pgUrl, schema);
      }
      producerStore = openStore();
      await producerStore.migrate();
      const hooks = options.kind === 'postgres' && options.comments ? [commentHook(producerStore)] : [];
      producer = createRunEngine({ store: producerStore, queue, hooks });
      if (options.kind === 'postgres' && options.replicas === 2) workerStore = openStore();
    },

    async enqueue(seq) {
      await producer!.enqueue({ stage: 'bench', owner: 'bench', repo: 'queue', number: seq, payload: { seq } });
    },

    async startWorker(_concurrency, hooks) {
      // Capacity is queue.concurrency (the engine's own limit), like the peers' worker concurrency.
      const store = workerStore ?? producerStore!;
      const engine = workerStore ? createRunEngine({ store: workerStore, queue }) : producer!;
      worker = startClaimLoop(engine, workerStore ? store : undefined, hooks);
      await worker.ready;
    },

    async purge() {
      await producerStore!.db.deleteFrom('runs').where('status', '=', 'queued').execute();
    },

    async stopWorker() {
      await worker?.stop();
      worker = undefined;
    },

    async teardown() {
      await worker?.stop();
      await workerStore?.close();
      await producerStore?.close();
      workerStore = producerStore = undefined;
      if (dir) fs.rmSync(dir, { recursive: true, force: true });
      if (options.kind === 'postgres') await dropSchema(env.pgUrl, schema);
    },
  };
}

/** `serve`'s status-comment hook, on an outbox nobody delivers from; the account is only a name. */
function commentHook(store: Store): TransitionHook {
  const outbox = createOutbox({ store, handlers: {} });
  return createStatusCommentHook({ accounts: { dev: {} as ForgeClient }, outbox });
}

interface ClaimLoop {
  ready: Promise<void>;
  stop(): Promise<void>;
}

/**
 * What the dispatcher does, minus the workspace: claim whenever a wake-up says work or capacity may
 * be there, then markRunning → complete (a workspace that finishes at once). One claim at a time;
 * a wake-up during a claim makes the loop claim again, so none is lost; a claim takes every run a
 * slot is free for, so nothing else does. Left out, as the bench has no delayed runs: the
 * dispatcher's read after each claim of when the next delayed run is due.
 */
function startClaimLoop(engine: RunService, listenOn: Store | undefined, hooks: WorkerHooks): ClaimLoop {
  let stopped = false;
  let claiming: Promise<void> | undefined;
  let again = false;
  const inFlight = new Set<Promise<void>>();

  async function process({ run, leaseToken }: ClaimedRun): Promise<void> {
    hooks.claimed(Number(run.payload.seq));
    try {
      await engine.markRunning(run.id, leaseToken, { workspaceId: `noop-${run.id}` });
      await engine.complete(run.id, { status: 'succeeded', exitCode: 0 });
      hooks.completed();
    } catch (err) {
      hooks.error(err);
    }
  }

  async function claimWhileWoken(): Promise<void> {
    do {
      again = false;
      try {
        const claimed = await engine.claim();
        for (const claim of claimed) {
          const job = process(claim).finally(() => inFlight.delete(job));
          inFlight.add(job);
        }
      } catch (err) {
        hooks.error(err);
      }
    } while (again && !stopped);
  }

  const pump = (): void => {
    if (stopped) return;
    if (claiming) {
      again = true;
      return;
    }
    claiming = claimWhileWoken().finally(() => (claiming = undefined));
  };

  const unsubscribe = engine.on('queue:wake', pump);
  const poll = setInterval(pump, FALLBACK_POLL_MS);
  const listening = listenOn
    ? listenOn.listen(NOTIFY_CHANNEL, (payload) => payload !== 'events' && pump())
    : Promise.resolve(async () => {});
  pump();

  return {
    ready: listening.then(() => undefined),
    async stop() {
      if (stopped) return;
      stopped = true;
      clearInterval(poll);
      unsubscribe();
      await (
        await listening
      )();
      await claiming;
      await Promise.allSettled([...inFlight]);
    },
  };
}
