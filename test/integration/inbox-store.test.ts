import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createInboxStore, type InboxStore, type NewDelivery } from '../../src/ingress/index.js';
import { newDelivery } from '../helpers/deliveries.js';
import { STORE_KINDS, type TestStore } from '../helpers/stores.js';

const available = Object.fromEntries(await Promise.all(STORE_KINDS.map(async (k) => [k.kind, await k.available()])));

/** Mixed case: the store keeps repositories lower-cased. */
const delivery = (over: Partial<NewDelivery> = {}) => newDelivery({ repository: 'Acme/App', ...over });

describe.each(STORE_KINDS)('inbox store on $kind', ({ kind, create }) => {
  let t: TestStore;
  let clock = 1_000_000;
  let inbox: InboxStore;

  beforeEach(async (ctx) => {
    if (!available[kind]) ctx.skip();
    t = await create();
    await t.store.migrate();
    clock = 1_000_000;
    inbox = createInboxStore(t.store, () => clock);
  });
  afterEach(async () => {
    await t?.cleanup();
  });

  it('takes deliveries oldest first, one at a time per issue, and re-takes one whose lease expired', async () => {
    const first = await inbox.insert(delivery({ body: '{"n":1}' }));
    const second = await inbox.insert(delivery({ body: '{"n":2}' }));
    const other = await inbox.insert(delivery({ body: '{"n":3}', number: 2 }));
    expect(first.repository).toBe('acme/app');

    const a = await inbox.claimNext(10_000);
    expect(a?.delivery.id).toBe(first.id);
    // The second of issue #1 waits for the first; issue #2 does not.
    const b = await inbox.claimNext(10_000);
    expect(b?.delivery.id).toBe(other.id);
    expect(await inbox.claimNext(10_000)).toBeNull();

    // The first one's worker died: after its lease it is taken again, not the second.
    clock += 10_001;
    const again = await inbox.claimNext(10_000);
    expect(again?.delivery.id).toBe(first.id);
    expect(again?.delivery.attempts).toBe(2);
    // The stale worker cannot record a verdict any more.
    const stale = await t.store.transaction((_trx, scope) => inbox.markProcessed(scope, a!, { outcome: 'ignored', verdict: 'x' }));
    expect(stale).toBe(false);
    const done = await t.store.transaction((_trx, scope) =>
      inbox.markProcessed(scope, again!, { outcome: 'started', verdict: 'analyse queued', runIds: [7], stages: ['analyse'] }),
    );
    expect(done).toBe(true);
    expect(await inbox.get(first.id)).toMatchObject({ status: 'processed', outcome: 'started', runIds: [7], stages: ['analyse'] });
    expect((await inbox.claimNext(10_000))?.delivery.id).toBe(second.id);
  });

  it('claims a batch in one go: earliest due first, one per issue, and the next due time is the lease expiry', async () => {
    const a = await inbox.insert(delivery({ body: '{"n":1}' }));
    await inbox.insert(delivery({ body: '{"n":2}' }));
    clock += 1;
    const c = await inbox.insert(delivery({ body: '{"n":3}', number: 2 }));
    const d = await inbox.insert(delivery({ body: '{"n":4}', number: 3 }));
    const [first] = await inbox.claimDue(10_000, 1);
    expect(first?.delivery.id).toBe(a.id);
    await inbox.retryLater(first!, 5, 'forge API: 503');
    // Issue #1's second delivery waits behind its first, which is put off.
    expect((await inbox.claimDue(10_000, 10)).map((x) => x.delivery.id)).toEqual([c.id, d.id]);
    expect(await inbox.nextDueAt()).toBe(clock + 5);
    clock += 5;
    expect((await inbox.claimDue(10_000, 10)).map((x) => x.delivery.id)).toEqual([a.id]);
    // Everything takeable is taken: the next due time is the earliest lease expiry.
    expect(await inbox.nextDueAt()).toBe(clock - 5 + 10_000);
  });

  it('stores deliveries that arrive together in one transaction, and one that cannot be stored fails alone', async () => {
    let commits = 0;
    inbox.onInsert(() => (commits += 1));
    const together = await Promise.all([1, 2, 3].map((n) => inbox.insert(delivery({ body: `{"n":${n}}`, number: n }))));
    expect(commits).toBe(1);
    expect(together.map((d) => d.id)).toEqual([together[0]!.id, together[0]!.id + 1, together[0]!.id + 2]);
    // NOT NULL refuses a delivery without an endpoint: its neighbours are stored all the same.
    const results = await Promise.allSettled([
      inbox.insert(delivery({ body: '{"n":4}' })),
      inbox.insert(delivery({ body: '{"n":5}', endpoint: null as unknown as string })),
      inbox.insert(delivery({ body: '{"n":6}' })),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    const stored = await inbox.list();
    expect(stored.deliveries.map((d) => d.body).sort()).toEqual(['{"n":1}', '{"n":2}', '{"n":3}', '{"n":4}', '{"n":6}']);
    // What insert answers is what was stored.
    expect(await inbox.get(together[1]!.id)).toEqual(together[1]);
  });

  it('puts a delivery off with backoff, and finds earlier copies by body hash or delivery id', async () => {
    const first = await inbox.insert(delivery({ deliveryId: 'd-1' }));
    const claimed = await inbox.claimNext(10_000);
    expect(await inbox.retryLater(claimed!, 5_000, 'forge API: 503')).toBe(true);
    expect(await inbox.claimNext(10_000)).toBeNull();
    expect(await inbox.nextDueAt()).toBe(clock + 5_000);
    clock += 5_000;
    expect((await inbox.claimNext(10_000))?.delivery).toMatchObject({ id: first.id, lastError: 'forge API: 503' });

    const copy = await inbox.insert(delivery({ deliveryId: 'd-2', endpoint: '/webhook/gitea-issue-label' }));
    const sameId = await inbox.insert(delivery({ deliveryId: 'd-1', body: '{"other":true}' }));
    expect((await inbox.earlierCopies(copy, 0)).map((c) => c.id)).toEqual([first.id]);
    expect((await inbox.earlierCopies(sameId, 0)).map((c) => c.id)).toEqual([first.id]);
    // Outside the retention window nothing counts.
    expect(await inbox.earlierCopies(copy, clock + 1)).toEqual([]);
  });

  it('lists newest first with filters and a cursor', async () => {
    for (let i = 0; i < 5; i++) await inbox.insert(delivery({ body: `{"i":${i}}`, source: i === 4 ? 'sync' : 'webhook' }));
    const page = await inbox.list({ limit: 2 });
    expect(page.deliveries).toHaveLength(2);
    const next = await inbox.list({ limit: 2, before: page.nextCursor! });
    expect(next.deliveries[0]!.id).toBeLessThan(page.deliveries[1]!.id);
    expect((await inbox.list({ source: 'sync' })).deliveries).toHaveLength(1);
    expect((await inbox.list({ repository: 'ACME/app' })).deliveries).toHaveLength(5);
    expect(await inbox.counts()).toEqual({ pending: 5, processing: 0, processed: 0 });
  });
});
