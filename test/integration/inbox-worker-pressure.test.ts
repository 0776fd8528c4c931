import { afterEach, describe, expect, it } from 'vitest';
import {
  createInboxStore,
  createInboxWorker,
  DELIVERY_SOURCE,
  type ClaimedDelivery,
  type InboxWorker,
} from '../../src/ingress/inbox/index.js';
import { STORE_KINDS, type TestStore } from '../helpers/stores.js';
import { until } from '../helpers/until.js';

/**
 * While deliveries arrive on a busy event loop, the inbox worker yields to the
 * accept path (one delivery at a time, a pause between them), and takes its full concurrency
 * again once the pressure is gone. Claims come in batches, each issue still in order.
 */
const available = Object.fromEntries(await Promise.all(STORE_KINDS.map(async (k) => [k.kind, await k.available()])));

let t: TestStore | undefined;
let worker: InboxWorker | undefined;
const gates: Array<() => void> = [];

afterEach(async () => {
  for (const open of gates.splice(0)) open();
  await worker?.stop();
  await t?.cleanup();
  worker = t = undefined;
});

describe.each(STORE_KINDS)('the inbox worker on $kind', ({ kind, create }) => {
  it('takes one delivery at a time under accept pressure, and its full concurrency without', async (ctx) => {
    if (!available[kind]) ctx.skip();
    t = await create();
    await t.store.migrate();
    const store = t.store;
    const inbox = createInboxStore(store);
    for (let n = 1; n <= 6; n++) {
      await inbox.insert({
        source: DELIVERY_SOURCE.webhook,
        endpoint: '/webhook/gitea',
        deliveryId: `d-${n}`,
        event: 'issues',
        eventType: 'issues',
        headers: {},
        body: `{"n":${n}}`,
        repository: 'acme/app',
        number: n,
      });
    }

    let high = true;
    let looks = 0;
    const started: number[] = [];
    const inProgress = new Set<number>();
    let most = 0;
    worker = createInboxWorker({
      inbox,
      store,
      logger: { warn: () => {}, error: () => {} },
      retry: { baseMs: 1_000, maxMs: 1_000 },
      concurrency: 4,
      busyPauseMs: 1,
      pressure: {
        noteInsert: () => {},
        high: () => {
          looks += 1;
          return high;
        },
      },
      async process(claimed: ClaimedDelivery) {
        const id = claimed.delivery.id;
        started.push(id);
        inProgress.add(id);
        most = Math.max(most, inProgress.size);
        await new Promise<void>((resolve) => gates.push(resolve));
        await store.transaction((_trx, scope) => inbox.markProcessed(scope, claimed, { outcome: 'ignored', verdict: 'test' }));
        inProgress.delete(id);
        return { outcome: 'ignored', verdict: 'test', runs: [] };
      },
    });
    await worker.start();

    await until(() => started.length === 1, 'the first delivery taken');
    // The worker keeps looking (woken by hand) and takes nothing more while one is in progress.
    for (let i = 0; i < 2; i++) {
      const before = looks;
      worker.wake();
      await until(() => looks > before, 'the worker looking again');
    }
    expect(started).toHaveLength(1);

    // The first one done: the next is taken, still one at a time.
    gates.shift()!();
    await until(() => started.length === 2, 'the second delivery taken');
    expect(most).toBe(1);

    // The pressure gone: up to four at once.
    high = false;
    worker.wake();
    await until(() => inProgress.size === 4, 'four deliveries in progress');
    for (const open of gates.splice(0)) open();
    await until(() => started.length === 6, 'every delivery taken');
    for (const open of gates.splice(0)) open();
    await until(async () => (await inbox.counts()).processed === 6, 'every delivery processed');
    expect(most).toBe(4);
    expect(new Set(started).size).toBe(6);
  });
});
