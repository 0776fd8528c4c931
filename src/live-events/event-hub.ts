import { createLoop, errorMessage, type Loop } from '../background/index.js';
import type { Logger } from '../log/index.js';
import { NOTIFY_CHANNEL, type Run, type RunEngine, type RunEvent, type RunQueries } from '../runs/index.js';
import type { Store } from '../store/index.js';
import { runView } from './run-view.js';
import type { ForgeWebRoots } from './forge-links.js';

/**
 * The live event stream behind `GET /api/events`.
 *
 * One shared reader per process follows `run_events` by id and fans each new row out to every
 * connected client. It is woken by this process's own commits (the engine's `run:event`), by
 * other replicas' `NOTIFY` (PostgreSQL), and by a slow poll that catches anything a lost
 * notification missed. Because it reads from the table rather than forwarding in-process events, a client sees
 * events raised on any replica, and `Last-Event-ID` resume replays from the same table.
 *
 * PostgreSQL hands out identity values before commit, so a transaction that took id 9 may commit
 * after one that took id 10. The reader therefore keeps ids it has not seen below the highest
 * one it has ("holes") open for `gapWaitMs` before giving up on them (a rolled-back id never
 * fills).
 *
 * A client never slows anyone down: frames go into its own stream queue; a client whose queue
 * grows past `maxBufferBytes` is disconnected and resumes with its Last-Event-ID.
 */

export interface EventHubOptions {
  /** Whose committed events wake the reader. */
  engine: Pick<RunEngine, 'on'>;
  runs: Pick<RunQueries, 'eventsSince' | 'getMany' | 'lastEventId'>;
  /** Where other replicas' NOTIFY arrive. */
  store: Pick<Store, 'listen'>;
  logger: Logger;
  /** The configured forges' web roots, for the runs' links. */
  forges?: ForgeWebRoots;
  /** Comment frames that keep proxies from closing idle streams. @default 15000 */
  heartbeatMs?: number;
  /** Fallback read while clients are connected. @default 2000 */
  pollMs?: number;
  /** Unread bytes a client may fall behind before it is dropped. @default 1 MiB */
  maxBufferBytes?: number;
  /** How long an id below the newest seen may still commit. @default 5000 */
  gapWaitMs?: number;
  now?: () => number;
}

export interface EventStreamRequest {
  /** Replay events with a larger id first (Last-Event-ID); absent = only new events. */
  afterId?: number;
  /** Only this run's events. */
  runId?: number;
  /**
   * Closes the client's connection at once (the HTTP layer passes the socket's destroy). Without
   * it a dropped client's stream is errored, which the server also turns into a closed connection.
   */
  disconnect?: () => void;
  /**
   * Whether the client's credential is still good, asked at every heartbeat: a stream whose token
   * was revoked or whose dashboard session ended (logout, expiry) is closed, not left streaming.
   */
  stillAllowed?: () => Promise<boolean>;
}

export interface EventHub {
  start(): Promise<void>;
  /** Ends every stream (clients reconnect elsewhere) and stops reading. */
  stop(): Promise<void>;
  /** A text/event-stream body for one client. */
  open(request: EventStreamRequest): ReadableStream<Uint8Array>;
  /** Reads new events now (tests and callers that just wrote). */
  poke(): Promise<void>;
  readonly clientCount: number;
}

interface Client {
  controller: ReadableStreamDefaultController<Uint8Array>;
  runId?: number;
  disconnect?: () => void;
  stillAllowed?: () => Promise<boolean>;
  /** Live frames held back while the client's replay runs. */
  held: Array<{ id: number; frame: Uint8Array; runId: number }> | null;
  /** Ids the replay already sent; the live reader may still reach them later. */
  replayed: Set<number> | null;
  replayedMax: number;
  closed: boolean;
  demand?: () => void;
}

const encoder = new TextEncoder();
/** Events read per query; one page is delivered at once, so keep it well under maxBufferBytes. */
const REPLAY_PAGE = 200;
const MAX_HELD = 10_000;

export function createEventHub(options: EventHubOptions): EventHub {
  const { engine, runs, store, logger, forges = {} } = options;
  const heartbeatMs = options.heartbeatMs ?? 15_000;
  const pollMs = options.pollMs ?? 2_000;
  const maxBufferBytes = options.maxBufferBytes ?? 1024 * 1024;
  const gapWaitMs = options.gapWaitMs ?? 5_000;
  const now = options.now ?? Date.now;

  const clients = new Set<Client>();
  let floor = 0;
  const seen = new Set<number>();
  const holes = new Map<number, number>();
  let started: Promise<void> | undefined;
  let stopped = false;
  /** Something may have been committed since the last read. */
  let dirty = false;
  /** Reads run one after the other: two at once could deliver a newer page before an older one. */
  let reading: Promise<void> = Promise.resolve();
  let unsubscribe: (() => void) | undefined;
  let unlisten: (() => Promise<void>) | undefined;

  const reader: Loop = createLoop({
    name: 'event stream reader',
    logger,
    pollMs,
    async step() {
      // The fallback poll only matters while someone is listening, or an id may still fill in.
      if (dirty || clients.size > 0 || holes.size > 0) await read();
    },
  });
  const heartbeat: Loop = createLoop({
    name: 'event stream heartbeat',
    logger,
    pollMs: heartbeatMs,
    firstDelayMs: heartbeatMs,
    async step() {
      const ping = encoder.encode(`: ping ${now()}\n\n`);
      for (const client of clients) if (!client.held) send(client, ping);
      // A check that cannot be answered (the database is away) keeps the stream: an outage must
      // not disconnect every dashboard at once; the next heartbeat asks again.
      await Promise.all(
        [...clients].map(async (client) => {
          if (client.stillAllowed && !(await client.stillAllowed().catch(() => true))) drop(client, 'credential no longer valid');
        }),
      );
    },
  });
  const wake = () => {
    dirty = true;
    reader.wake();
  };

  function frameOf(event: RunEvent, run: Run | null): Uint8Array {
    const payload = { ...event, run: run ? runView(run, forges) : null };
    return encoder.encode(`id: ${event.id}\ndata: ${JSON.stringify(payload)}\n\n`);
  }

  async function framesFor(events: RunEvent[]): Promise<Array<{ id: number; frame: Uint8Array; runId: number }>> {
    // One query for the runs of a whole page of events, not one per event.
    const byId = await runs.getMany(events.map((e) => e.runId));
    return events.map((e) => ({ id: e.id, runId: e.runId, frame: frameOf(e, byId.get(e.runId) ?? null) }));
  }

  function drop(client: Client, reason: string): void {
    if (client.closed) return;
    client.closed = true;
    clients.delete(client);
    logger.debug({ reason }, 'event stream client dropped');
    client.demand?.();
    if (client.disconnect) {
      client.disconnect();
      return;
    }
    try {
      // error() discards what is queued: a client this far behind resumes from its Last-Event-ID.
      client.controller.error(new Error(reason));
    } catch {
      // already closed by the other side
    }
  }

  function send(client: Client, frame: Uint8Array): void {
    if (client.closed) return;
    if ((client.controller.desiredSize ?? 0) < -maxBufferBytes) {
      drop(client, 'client fell too far behind');
      return;
    }
    client.controller.enqueue(frame);
  }

  function deliver(item: { id: number; frame: Uint8Array; runId: number }): void {
    for (const client of clients) {
      if (client.runId !== undefined && client.runId !== item.runId) continue;
      if (client.held) {
        if (client.held.length >= MAX_HELD) drop(client, 'client replay too slow');
        else client.held.push(item);
        continue;
      }
      if (client.replayed) {
        if (client.replayed.has(item.id)) continue;
        if (floor >= client.replayedMax) client.replayed = null;
      }
      send(client, item.frame);
    }
  }

  async function readNew(): Promise<void> {
    // From the floor (so late commits into holes are found), paging on past rows already seen.
    let cursor = floor;
    for (;;) {
      const events = await runs.eventsSince(cursor, REPLAY_PAGE);
      const fresh = events.filter((e) => !seen.has(e.id) && e.id > floor);
      for (const e of fresh) seen.add(e.id);
      if (fresh.length && clients.size) for (const item of await framesFor(fresh)) deliver(item);
      advanceFloor();
      if (events.length < REPLAY_PAGE) return;
      cursor = events[events.length - 1]!.id;
      // Let the sockets take what was just queued before the next page lands on top of it.
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  function advanceFloor(): void {
    if (seen.size === 0) return;
    const top = Math.max(...seen);
    const t = now();
    // Far apart ids (a manual sequence bump) are not worth tracking one by one.
    if (top - floor > 50_000) {
      for (const id of seen) if (id <= top) seen.delete(id);
      holes.clear();
      floor = top;
      return;
    }
    for (let id = floor + 1; id < top; id++) if (!seen.has(id) && !holes.has(id)) holes.set(id, t);
    while (floor < top) {
      const next = floor + 1;
      if (seen.has(next)) seen.delete(next);
      else if (t - (holes.get(next) ?? t) >= gapWaitMs) holes.delete(next);
      else break;
      floor = next;
    }
  }

  function read(): Promise<void> {
    if (stopped || !started) return Promise.resolve();
    dirty = false;
    const next = reading.then(readNew);
    reading = next.catch(() => {});
    return next;
  }

  async function replay(client: Client, afterId: number): Promise<void> {
    let cursor = afterId;
    const replayed = new Set<number>();
    for (;;) {
      const events = await runs.eventsSince(cursor, REPLAY_PAGE);
      const wanted = events.filter((e) => client.runId === undefined || e.runId === client.runId);
      for (const item of await framesFor(wanted)) {
        if (client.closed) return;
        // Replay waits for the client to read (it may be far behind); live frames are held meanwhile.
        while ((client.controller.desiredSize ?? 1) <= 0 && !client.closed) await new Promise<void>((resolve) => (client.demand = resolve));
        client.controller.enqueue(item.frame);
        replayed.add(item.id);
        client.replayedMax = Math.max(client.replayedMax, item.id);
      }
      if (events.length < REPLAY_PAGE) break;
      cursor = events[events.length - 1]!.id;
    }
    const held = client.held ?? [];
    client.held = null;
    client.replayed = replayed;
    for (const item of held) if (!replayed.has(item.id)) send(client, item.frame);
  }

  return {
    get clientCount() {
      return clients.size;
    },

    start() {
      started ??= (async () => {
        floor = await runs.lastEventId();
        unsubscribe = engine.on('run:event', wake);
        unlisten = await store.listen(NOTIFY_CHANNEL, wake).catch((err: unknown) => {
          logger.warn({ error: errorMessage(err) }, "cannot listen for other replicas' events; relying on polling");
          return undefined;
        });
        reader.start();
        heartbeat.start();
      })();
      return started;
    },

    async stop() {
      stopped = true;
      await started?.catch(() => {});
      unsubscribe?.();
      await unlisten?.().catch(() => {});
      await Promise.all([reader.stop(), heartbeat.stop()]);
      await reading;
      for (const client of clients) {
        client.closed = true;
        client.demand?.();
        try {
          client.controller.close();
        } catch {
          // already gone
        }
      }
      clients.clear();
    },

    poke: read,

    open(request) {
      let client!: Client;
      return new ReadableStream<Uint8Array>(
        {
          start(controller) {
            client = {
              controller,
              runId: request.runId,
              disconnect: request.disconnect,
              stillAllowed: request.stillAllowed,
              held: request.afterId !== undefined ? [] : null,
              replayed: null,
              replayedMax: 0,
              closed: false,
            };
            controller.enqueue(encoder.encode(`retry: 2000\n: connected\n\n`));
            if (stopped) {
              client.closed = true;
              controller.close();
              return;
            }
            clients.add(client);
            if (request.afterId !== undefined) {
              replay(client, request.afterId).catch((err: unknown) => {
                logger.warn({ err }, 'event stream replay failed');
                drop(client, 'replay failed');
              });
            }
          },
          pull() {
            client.demand?.();
            client.demand = undefined;
          },
          cancel() {
            client.closed = true;
            clients.delete(client);
            client.demand?.();
          },
        },
        { highWaterMark: 64 * 1024, size: (chunk) => chunk.byteLength },
      );
    },
  };
}
