import { describe, expect, it } from 'vitest';
import type { Loop } from './loop.js';
import { createQueueWorker, type WakeSource } from './queue-worker.js';

/** A loop that records what is done to it, in one shared journal. */
function fakeLoops(journal: string[]) {
  let made = 0;
  return (): Loop => {
    const n = ++made;
    return {
      start: () => journal.push(`loop ${n} start`),
      stop: async () => void journal.push(`loop ${n} stop`),
      wake: () => journal.push(`loop ${n} wake`),
    };
  };
}

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

const quiet = { warn: () => {}, error: () => {} };

describe('createQueueWorker', () => {
  it('subscribes its wake sources while it runs, starts a fresh loop at each start, and drains its work at stop', async () => {
    const journal: string[] = [];
    const wakes: Array<() => void> = [];
    const source: WakeSource = (wake) => {
      wakes.push(wake);
      journal.push('subscribe');
      return () => journal.push('unsubscribe');
    };
    const work = deferred();
    const inFlight = new Set<Promise<unknown>>([work.promise.then(() => journal.push('work done'))]);
    const worker = createQueueWorker({ name: 'test', logger: quiet, createLoop: fakeLoops(journal), wakeSources: [source], inFlight });

    expect(worker.start()).toBe(worker.start());
    await worker.start();
    wakes[0]!();
    expect(journal).toEqual(['subscribe', 'loop 1 start', 'loop 1 wake']);

    const stopped = worker.stop();
    expect(worker.stop()).toBe(stopped);
    expect(worker.stopping).toBe(true);
    const done = stopped.then(() => journal.push('stopped'));
    // Every promise that could settle has settled by the next macrotask: only the work holds stop.
    await new Promise((resolve) => setImmediate(resolve));
    expect(journal).toEqual(['subscribe', 'loop 1 start', 'loop 1 wake', 'unsubscribe', 'loop 1 stop']);
    work.resolve();
    await done;
    expect(journal.slice(-2)).toEqual(['work done', 'stopped']);

    // Started again after a stop: a new loop, subscribed anew.
    journal.length = 0;
    await worker.start();
    expect(worker.stopping).toBe(false);
    worker.wake();
    await worker.stop();
    expect(journal).toEqual(['subscribe', 'loop 2 start', 'loop 2 wake', 'unsubscribe', 'loop 2 stop']);
  });

  it('logs a wake source that cannot subscribe, and runs on the others and its poll', async () => {
    const journal: string[] = [];
    const warnings: string[] = [];
    const logger = { ...quiet, warn: (details: object, message: string) => warnings.push(`${message} ${JSON.stringify(details)}`) };
    const failing: WakeSource = async () => {
      throw new Error('connect ECONNREFUSED 127.0.0.1:5432');
    };
    const working: WakeSource = () => (journal.push('subscribe'), () => journal.push('unsubscribe'));
    const worker = createQueueWorker({
      name: 'test worker',
      logger,
      createLoop: fakeLoops(journal),
      wakeSources: [failing, working],
      inFlight: new Set(),
    });
    await worker.start();
    expect(warnings).toEqual(['test worker could not listen for wake-ups; polling only {"error":"connect ECONNREFUSED 127.0.0.1:5432"}']);
    await worker.stop();
    expect(journal).toEqual(['subscribe', 'loop 1 start', 'unsubscribe', 'loop 1 stop']);
  });

  it('never starts its loop when stopped while still subscribing', async () => {
    const journal: string[] = [];
    const subscribed = deferred();
    const slow: WakeSource = async () => {
      await subscribed.promise;
      return () => journal.push('unsubscribe');
    };
    const worker = createQueueWorker({
      name: 'test',
      logger: quiet,
      createLoop: fakeLoops(journal),
      wakeSources: [slow],
      inFlight: new Set(),
    });
    const started = worker.start();
    const stopped = worker.stop();
    subscribed.resolve();
    await Promise.all([started, stopped]);
    expect(journal).toEqual(['unsubscribe', 'loop 1 stop']);
  });
});
