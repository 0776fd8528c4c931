import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createInboxStore, DELIVERY_SOURCE, pruneProcessedDeliveries, type InboxStore, type NewDelivery } from '../../src/ingress/index.js';
import { ADMIN_TOKEN, bearer, startTestApp, type TestApp } from '../helpers/app.js';
import { newDelivery } from '../helpers/deliveries.js';
import { describeWithReference, referencePath } from '../helpers/reference.js';
import { createSqliteTestStore, STORE_KINDS, type TestStore } from '../helpers/stores.js';

const available = Object.fromEntries(await Promise.all(STORE_KINDS.map(async (k) => [k.kind, await k.available()])));

interface View {
  id: number;
  source: string;
  event: string | null;
  repository: string | null;
  outcome: string;
  verdict: string | null;
  runs: Array<{ id: number; url: string }>;
}
interface Page {
  deliveries: View[];
  nextCursor: string | null;
}

const delivery = (over: Partial<NewDelivery> = {}) => newDelivery({ body: `{"n":${Math.random()}}`, ...over });

describe.each(STORE_KINDS)('deliveries API on $kind', ({ kind, create }) => {
  let t: TestStore;
  let server: TestApp;
  let inbox: InboxStore;

  const get = async <T>(path: string, headers: Record<string, string> = bearer()): Promise<{ status: number; body: T }> => {
    const response = await fetch(`${server.url}${path}`, { headers });
    return { status: response.status, body: (await response.json()) as T };
  };

  /** Takes the next delivery and records `outcome` for it, as the inbox worker would. */
  async function process(outcome: 'started' | 'ignored' | 'duplicate', runIds: number[] = []): Promise<number> {
    const claimed = await inbox.claimNext(60_000);
    if (!claimed) throw new Error('no delivery to process');
    await t.store.transaction((_trx, scope) =>
      inbox.markProcessed(scope, claimed, { outcome, verdict: `${outcome}: by the test`, runIds }),
    );
    return claimed.delivery.id;
  }

  beforeEach(async (ctx) => {
    if (!available[kind]) ctx.skip();
    t = await create();
    // Not started: no inbox worker, so the tests decide each delivery's verdict themselves.
    server = await startTestApp(t, { start: false });
    await t.store.migrate();
    await server.app.tokens.bootstrap(ADMIN_TOKEN);
    inbox = createInboxStore(t.store);
  });
  afterEach(async () => {
    await server?.close();
    await t?.cleanup();
  });

  it('lists deliveries newest first, filtered by repository, event, verdict and source', async () => {
    const a = await inbox.insert(delivery({ repository: 'Acme/App', number: 1 }));
    const b = await inbox.insert(delivery({ repository: 'acme/other', number: 2, event: 'pull_request', eventType: 'pull_request_sync' }));
    const c = await inbox.insert(delivery({ source: DELIVERY_SOURCE.sync, endpoint: 'sync', repository: 'acme/app', number: 3 }));
    const d = await inbox.insert(delivery({ repository: 'acme/app', number: 4 }));
    // a, b, c get verdicts (one per issue, so the claim order is the insert order); d stays pending.
    const { run } = await server.app.engine.enqueue({ stage: 'analyse', owner: 'acme', repo: 'app', number: 1 });
    expect(await process('started', [run.id])).toBe(a.id);
    expect(await process('ignored')).toBe(b.id);
    expect(await process('duplicate')).toBe(c.id);

    const ids = async (query: string) => (await get<Page>(`/api/deliveries${query}`)).body.deliveries.map((x) => x.id);
    expect(await ids('')).toEqual([d.id, c.id, b.id, a.id]);
    expect(await ids('?repo=ACME/app')).toEqual([d.id, c.id, a.id]);
    expect(await ids('?event=pull_request')).toEqual([b.id]);
    expect(await ids('?event=pull_request_sync')).toEqual([b.id]);
    expect(await ids('?verdict=started')).toEqual([a.id]);
    expect(await ids('?verdict=pending')).toEqual([d.id]);
    expect(await ids('?source=sync')).toEqual([c.id]);
    expect(await ids('?source=replay')).toEqual([]);
    expect(await ids('?repo=acme/app&verdict=duplicate&source=sync')).toEqual([c.id]);

    const started = (await get<Page>(`/api/deliveries?verdict=started`)).body.deliveries[0]!;
    expect(started).toMatchObject({
      outcome: 'started',
      verdict: 'started: by the test',
      runs: [{ id: run.id, url: `/api/runs/${run.id}` }],
    });
    // The link leads to the run.
    expect((await get<{ run: { id: number } }>(started.runs[0]!.url)).body.run.id).toBe(run.id);
  });

  it('pages with an opaque cursor, stable while new deliveries arrive', async () => {
    const stored: number[] = [];
    for (let n = 1; n <= 7; n++) stored.push((await inbox.insert(delivery({ number: n }))).id);
    const seen: number[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = cursor === null ? '?limit=3' : `?limit=3&cursor=${cursor}`;
      const { status, body }: { status: number; body: Page } = await get<Page>(`/api/deliveries${query}`);
      expect(status).toBe(200);
      seen.push(...body.deliveries.map((x) => x.id));
      cursor = body.nextCursor;
      if (cursor !== null) expect(cursor).not.toMatch(/^\d+$/);
      // A delivery that arrives while someone pages does not shift the pages they have yet to see.
      if (pages++ === 0) await inbox.insert(delivery({ number: 99 }));
    } while (cursor !== null);
    expect(seen).toEqual([...stored].reverse());
    expect(pages).toBe(3);
  });

  it('refuses bad parameters with a message naming them', async () => {
    const cases: Array<[string, RegExp]> = [
      ['?colour=red', /unknown query parameter "colour"/],
      ['?source=email', /source must be one of webhook, sync, replay/],
      ['?limit=0', /limit must be a whole number from 1 to 200/],
      ['?limit=abc', /limit must be/],
      ['?repo=nope', /repo must look like owner\/repo/],
      ['?cursor=42', /cursor "42" is not one this API gave out/],
      ['?event=%3Cscript%3E', /event must be a short word/],
    ];
    for (const [query, message] of cases) {
      const { status, body } = await get<{ error: { message: string } }>(`/api/deliveries${query}`);
      expect({ query, status }).toEqual({ query, status: 400 });
      expect(body.error.message).toMatch(message);
    }
    expect((await get('/api/deliveries/abc')).status).toBe(400);
    const missing = await get<{ error: { message: string } }>('/api/deliveries/999');
    expect(missing.status).toBe(404);
    expect(missing.body.error.message).toMatch(/delivery 999 does not exist/);
  });

  it('shows one delivery with its headers masked, its body, verdict, attempts and history', async () => {
    const stored = await inbox.insert(
      delivery({
        deliveryId: 'f6266f16-1bf3-46a5-9ea4-602e06ead473',
        headers: {
          'x-gitea-delivery': 'f6266f16-1bf3-46a5-9ea4-602e06ead473',
          'x-gitea-event': 'issues',
          'x-gitea-signature': 'c0ffee',
          authorization: 'Bearer s3cr3t-t0ken',
        },
        body: '{\n  "secret": "12345",\n  "action": "opened"\n}',
      }),
    );
    await process('ignored');
    const { status, body } = await get<{ delivery: Record<string, unknown> & { history: Array<{ type: string }> } }>(
      `/api/deliveries/${stored.id}`,
    );
    expect(status).toBe(200);
    const text = JSON.stringify(body);
    for (const secret of ['c0ffee', 's3cr3t-t0ken', '12345']) expect(text).not.toContain(secret);
    expect(body.delivery).toMatchObject({
      id: stored.id,
      deliveryId: 'f6266f16-1bf3-46a5-9ea4-602e06ead473',
      sha256: stored.bodySha256,
      headers: { 'x-gitea-event': 'issues', 'x-gitea-signature': '******', authorization: '******' },
      outcome: 'ignored',
      verdict: 'ignored: by the test',
      attempts: 1,
      runs: [],
    });
    expect(JSON.parse(body.delivery.body as string)).toEqual({ secret: '******', action: 'opened' });
    expect(body.delivery.history.map((h) => h.type)).toEqual(['received', 'processed']);
  });

  it('replays only with an operate token, as a new delivery that names who replayed, as does the original history', async () => {
    const original = await inbox.insert(delivery());
    const post = (id: number, token?: string) =>
      fetch(`${server.url}/api/deliveries/${id}/replay`, { method: 'POST', headers: token === undefined ? {} : bearer(token) });

    // Not yet processed: a replay now would process the event twice at once.
    const early = await post(original.id, ADMIN_TOKEN);
    expect(early.status).toBe(409);
    expect(((await early.json()) as { error: { message: string } }).error.message).toMatch(/is pending .*replay it once it has a verdict/);
    await process('duplicate');

    const reader = await server.app.tokens.create('viewer', 'read');
    const operator = await server.app.tokens.create('oncall', 'operate');
    expect((await post(original.id)).status).toBe(401);
    const refused = await post(original.id, reader.token);
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(/needs operate/);
    // Reading is what a read token is for.
    expect((await get(`/api/deliveries/${original.id}`, bearer(reader.token))).status).toBe(200);
    expect((await get('/api/deliveries', bearer(reader.token))).status).toBe(200);
    expect((await post(999, operator.token)).status).toBe(404);
    // Nothing was stored by the refused attempts.
    expect((await get<Page>('/api/deliveries')).body.deliveries.map((x) => x.id)).toEqual([original.id]);

    const accepted = await post(original.id, operator.token);
    expect(accepted.status).toBe(202);
    const { delivery: copy, replayOf } = (await accepted.json()) as {
      delivery: View & { replayOf: number; status: string };
      replayOf: number;
    };
    expect(replayOf).toBe(original.id);
    expect(copy).toMatchObject({ source: 'replay', replayOf: original.id, status: 'pending', outcome: 'pending', event: 'issues' });

    type Detail = { delivery: View & { body: string; history: Array<{ type: string; detail: string; deliveryId?: number }> } };
    const shown = (await get<Detail>(`/api/deliveries/${original.id}`)).body.delivery;
    expect(shown.history.at(-1)).toEqual(
      expect.objectContaining({ type: 'replayed', detail: `by token "oncall" as delivery #${copy.id}`, deliveryId: copy.id }),
    );
    const replayed = (await get<Detail>(`/api/deliveries/${copy.id}`)).body.delivery;
    expect(replayed.body).toBe(original.body);
    expect(replayed.history[0]).toMatchObject({ type: 'received', detail: `replay of delivery #${original.id} by token "oncall"` });
    expect((await get<Page>('/api/deliveries?source=replay')).body.deliveries.map((x) => x.id)).toEqual([copy.id]);
  });
});

describe.each(STORE_KINDS)('delivery retention on $kind', ({ kind, create }) => {
  let t: TestStore | undefined;
  afterEach(async () => {
    await t?.cleanup();
    t = undefined;
  });

  it('prunes processed deliveries after the retention, counted from their verdict, and never an unprocessed one', async (ctx) => {
    if (!available[kind]) ctx.skip();
    t = await create();
    await t.store.migrate();
    const day = 24 * 60 * 60 * 1000;
    let clock = 1_764_547_200_000;
    const inbox = createInboxStore(t.store, () => clock);
    const settle = async () => {
      const claimed = await inbox.claimNext(60_000);
      await t!.store.transaction((_trx, scope) => inbox.markProcessed(scope, claimed!, { outcome: 'ignored', verdict: 'ignored' }));
      return claimed!.delivery.id;
    };

    const old = await inbox.insert(delivery({ number: 1 }));
    expect(await settle()).toBe(old.id);
    // Received at the same time as old, processed only 2 days later (the forge was down, say).
    const late = await inbox.insert(delivery({ number: 2 }));
    // Received then too, and still owed its effect.
    const stillOwed = await inbox.insert(delivery({ number: 3 }));
    clock += 2 * day;
    expect(await settle()).toBe(late.id);

    clock += 6 * day; // old: processed 8 days ago; late: 6 days ago; stillOwed: received 8 days ago, unprocessed.
    expect(await pruneProcessedDeliveries(t.store, 7, () => clock)).toBe(1);
    expect(await inbox.get(old.id)).toBeNull();
    for (const kept of [late, stillOwed]) expect(await inbox.get(kept.id)).not.toBeNull();

    clock += 30 * day;
    expect(await pruneProcessedDeliveries(t.store, 7, () => clock)).toBe(1);
    expect(await inbox.get(late.id)).toBeNull();
    // Never processed, however old: kept.
    expect((await inbox.get(stillOwed.id))?.status).toBe('pending');
  });
});

describeWithReference('gitea/payloads', 'deliveries inspector on a real Gitea payload', () => {
  let t: TestStore;
  let server: TestApp;

  beforeEach(async () => {
    t = await createSqliteTestStore();
    server = await startTestApp(t, { start: false });
    await t.store.migrate();
    await server.app.tokens.bootstrap(ADMIN_TOKEN);
  });
  afterEach(async () => {
    await server?.close();
    await t?.cleanup();
  });

  it('shows the body byte for byte, and masks the deprecated secret of an old one', async () => {
    const inbox = createInboxStore(t.store);
    const current = fs.readFileSync(path.join(referencePath('gitea/payloads'), 'gitea-issues-opened.json'), 'utf8');
    const legacy = fs.readFileSync(path.join(referencePath('gitea/payloads'), 'gitea-pull_request-synchronized-legacy-2018.json'), 'utf8');
    const a = await inbox.insert(delivery({ body: current }));
    const b = await inbox.insert(delivery({ body: legacy, event: 'pull_request', eventType: 'pull_request_sync', number: 2 }));
    const show = async (id: number) =>
      ((await (await fetch(`${server.url}/api/deliveries/${id}`, { headers: bearer() })).json()) as { delivery: { body: string } }).delivery
        .body;
    expect(await show(a.id)).toBe(current);
    const shown = await show(b.id);
    expect(JSON.parse(legacy).secret).toBe('12345');
    expect(JSON.parse(shown)).toEqual({ ...JSON.parse(legacy), secret: '******' });
  });
});
