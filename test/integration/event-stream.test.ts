import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sseMessages } from '../../src/cli/index.js';
import { createEventHub } from '../../src/live-events/index.js';
import { createStore } from '../../src/store/index.js';
import type { TaskRequest } from '../../src/runs/index.js';
import { silentLogger } from '../helpers/logger.js';
import { bearer, startTestApp, type TestApp } from '../helpers/app.js';
import { openSse, type SseConnection } from '../helpers/sse.js';
import { PG_URL, STORE_KINDS, type TestStore } from '../helpers/stores.js';
import { until } from '../helpers/until.js';

const available = Object.fromEntries(await Promise.all(STORE_KINDS.map(async (k) => [k.kind, await k.available()])));

const task = (over: Partial<TaskRequest> = {}): TaskRequest => ({ stage: 'develop', owner: 'acme', repo: 'app', number: 7, ...over });

describe.each(STORE_KINDS)('event stream on $kind', { timeout: 60_000 }, ({ kind, create }) => {
  let t: TestStore;
  let server: TestApp;
  const open: SseConnection[] = [];

  beforeEach(async (ctx) => {
    if (!available[kind]) ctx.skip();
    t = await create();
    server = await startTestApp(t);
    // Dispatch stays paused so the only events are the ones each test makes.
    await server.app.engine.pause();
  });
  afterEach(async () => {
    for (const c of open.splice(0)) c.close();
    await server?.close();
    await t?.cleanup();
  });

  const connect = async (query = '', headers: Record<string, string> = {}) => {
    const c = await openSse(`${server.url}/api/events${query}`, { ...bearer(), ...headers });
    open.push(c);
    return c;
  };

  const allEventIds = async () => (await t.store.db.selectFrom('run_events').select('id').orderBy('id').execute()).map((r) => Number(r.id));

  it('streams every transition and log batch with the run_events id and the run', async () => {
    const stream = await connect();
    const { run } = await server.app.engine.enqueue(task());
    await server.app.engine.appendEvent(run.id, 'run:progress', { lines: ['hello'] });
    await server.app.engine.cancel(run.id);
    await stream.until((events) => events.length >= 3);
    expect(stream.events.map((e) => [e.type, e.toStatus])).toEqual([
      ['run:queued', 'queued'],
      ['run:progress', null],
      ['run:cancelled', 'cancelled'],
    ]);
    expect(stream.events.map((e) => e.id)).toEqual(await allEventIds());
    expect(stream.events[1]!.data).toEqual({ lines: ['hello'] });
    expect(stream.events[2]!.run).toMatchObject({ id: run.id, status: 'cancelled' });
  });

  it('misses no event across a dropped connection when resuming with Last-Event-ID', async () => {
    const { engine } = server.app;
    const first = await connect();
    const { run } = await engine.enqueue(task());
    await engine.appendEvent(run.id, 'run:progress', { lines: ['one'] });
    await first.until((events) => events.length >= 2);
    const lastSeen = first.events.at(-1)!.id;
    first.close();
    await first.ended;

    // Written while no client is connected.
    for (let i = 0; i < 30; i++) await engine.appendEvent(run.id, 'run:progress', { lines: [`batch ${i}`] });
    const other = await engine.enqueue(task({ number: 8 }));
    await engine.cancel(other.run.id);

    const resumed = await connect('', { 'last-event-id': String(lastSeen) });
    // And some while the replay is running.
    const writing = (async () => {
      for (let i = 0; i < 20; i++) await engine.appendEvent(run.id, 'run:progress', { lines: [`late ${i}`] });
      await engine.cancel(run.id);
    })();
    await writing;
    // One more event after all the others: once it has arrived, anything the replay would have
    // sent twice or out of order has arrived before it.
    const other2 = await engine.enqueue(task({ number: 10 }));
    const expected = (await allEventIds()).filter((id) => id > lastSeen);
    await resumed.until((events) => events.some((e) => e.runId === other2.run.id));
    expect(resumed.events.map((e) => e.id)).toEqual(expected);
    expect([...first.events, ...resumed.events].map((e) => e.id)).toEqual(await allEventIds());
  });

  it('resumes from ?lastEventId= and filters one run with ?run=', async () => {
    const a = await server.app.engine.enqueue(task());
    const b = await server.app.engine.enqueue(task({ number: 9 }));
    await server.app.engine.appendEvent(a.run.id, 'run:progress', { lines: ['a'] });
    await server.app.engine.appendEvent(b.run.id, 'run:progress', { lines: ['b'] });
    const stream = await connect(`?lastEventId=0&run=${b.run.id}`);
    await stream.until((events) => events.length >= 2);
    expect(stream.events.every((e) => e.runId === b.run.id)).toBe(true);
    expect(stream.events.map((e) => e.type)).toEqual(['run:queued', 'run:progress']);
  });

  it('sends heartbeat comments on an idle stream', async () => {
    const response = await fetch(`${server.url}/api/events`, { headers: bearer() });
    const reader = response.body!.getReader();
    let text = '';
    while (!text.includes(': ping')) text += new TextDecoder().decode((await reader.read()).value);
    await reader.cancel();
    expect(text).toContain('retry: 2000');
  });

  it('drops a client that stops reading without holding up the others', async () => {
    const { engine, runs } = server.app;
    const hub = createEventHub({
      engine,
      runs,
      store: t.store,
      logger: silentLogger,
      heartbeatMs: 60_000,
      pollMs: 50,
      maxBufferBytes: 64 * 1024,
    });
    await hub.start();
    try {
      let disconnected = 0;
      // Opened and never read, like a client on a dead network.
      hub.open({ disconnect: () => disconnected++ });
      const healthy = hub.open({});
      expect(hub.clientCount).toBe(2);
      const received: number[] = [];
      const reading = (async () => {
        for await (const message of sseMessages(healthy)) received.push(Number(message.id));
      })();

      const { run } = await engine.enqueue(task());
      const line = 'x'.repeat(1024);
      for (let i = 0; i < 200; i++) await engine.appendEvent(run.id, 'run:progress', { lines: [line, String(i)] });
      await hub.poke();
      const expected = await allEventIds();
      await until(() => received.length >= expected.length, `${expected.length} events on the healthy stream`);

      expect(received).toEqual(expected);
      expect(disconnected).toBe(1);
      expect(hub.clientCount).toBe(1);
      await hub.stop();
      await reading;
    } finally {
      await hub.stop();
    }
  });
});

describe('event stream across PostgreSQL replicas', () => {
  let t: TestStore;
  let a: TestApp;
  let b: TestApp;

  beforeEach(async (ctx) => {
    if (!available.postgres) ctx.skip();
    t = await STORE_KINDS[1]!.create();
    a = await startTestApp(t);
    const second = createStore({ url: PG_URL, schema: t.schema });
    b = await startTestApp({ store: second, url: PG_URL, schema: t.schema, cleanup: () => second.close() });
    await a.app.engine.pause();
  });
  afterEach(async () => {
    await b?.close();
    await a?.close();
    await t?.cleanup();
  });

  it('delivers an event whose transaction commits after a later one (identity values are taken before commit)', async () => {
    const onA = await openSse(`${a.url}/api/events`, bearer());
    try {
      const { run } = await a.app.engine.enqueue(task());
      await onA.until((events) => events.length >= 1);
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      let inserted!: () => void;
      const insertedYet = new Promise<void>((resolve) => (inserted = resolve));
      // Takes the next id now and commits only when told to.
      const slow = t.store.transaction(async (trx) => {
        await trx
          .insertInto('run_events')
          .values({
            run_id: run.id,
            type: 'run:progress',
            from_status: null,
            to_status: null,
            data: '{"lines":["slow"]}',
            created_at: Date.now(),
          })
          .execute();
        inserted();
        await gate;
      });
      await insertedYet;
      await a.app.engine.appendEvent(run.id, 'run:progress', { lines: ['fast'] });
      await onA.until((events) => events.some((e) => e.data?.lines?.toString() === 'fast'));
      release();
      await slow;
      await onA.until((events) => events.some((e) => e.data?.lines?.toString() === 'slow'));
      const ids = onA.events.map((e) => e.id);
      expect(new Set(ids).size).toBe(ids.length);
      expect(ids.sort((x, y) => x - y)).toEqual(
        (await t.store.db.selectFrom('run_events').select('id').orderBy('id').execute()).map((r) => Number(r.id)),
      );
    } finally {
      onA.close();
    }
  });

  it('delivers an event raised on one replica to a client of another', async () => {
    const onB = await openSse(`${b.url}/api/events`, bearer());
    try {
      const { run } = await a.app.engine.enqueue(task());
      await a.app.engine.appendEvent(run.id, 'run:progress', { lines: ['from replica a'] });
      await onB.until((events) => events.length >= 2);
      expect(onB.events.map((e) => [e.runId, e.type])).toEqual([
        [run.id, 'run:queued'],
        [run.id, 'run:progress'],
      ]);
    } finally {
      onB.close();
    }
  });
});
