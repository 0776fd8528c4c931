import fs from 'node:fs';
import path from 'node:path';
import { codeOf, errorMessage } from '../../background/index.js';
import type { NewDelivery } from '../inbox/index.js';
import { decodeRecords, encodeRecord } from './format.js';

/**
 * The replica's local spool: where a verified delivery goes when the database cannot store it
 * within the accept budget, so the forge (which sends each webhook once) still gets its 2xx.
 *
 * On disk: segments `spool-<seq>.log` of length-prefixed, checksummed records (./format.ts),
 * appended and fdatasync'ed before the caller is answered; `spool-<seq>.log.done` holds how far
 * a segment has been put into the inbox. Appends go to the newest segment; `drain` seals it (the
 * next append starts another) and moves every sealed segment, in order, into the inbox, deleting
 * a segment only after the commit of its last record. A crash between a commit and the progress
 * write puts a delivery into the inbox twice, where the inbox's dedup (same body, same delivery
 * id) makes the second copy a `duplicate`: at least once into the inbox, exactly once in effect.
 *
 * What it promises: a delivery answered 2xx survives a crash or kill -9 of baton and a reboot of
 * the machine (the fsync). What it does not: the loss of the replica's disk, or of the replica
 * itself for good, with its spool (use a persistent volume for the data directory).
 */
export interface Spool {
  readonly dir: string;
  /** Reads what an earlier process left; idempotent. Appends and drains open it themselves. */
  open(): Promise<void>;
  /** Resolves once `delivery` is on disk (fdatasync'ed); rejects when it could not be written (a full disk). */
  append(delivery: NewDelivery): Promise<void>;
  /** Deliveries spooled and not yet in the inbox, appends in flight included. */
  readonly pending: number;
  /**
   * Moves spooled deliveries into the inbox, oldest first, through `insert` (which resolves after
   * the commit). Resolves to how many it moved; rejects when `insert` failed (the database is
   * still away), after keeping what it did move.
   */
  drain(insert: (delivery: NewDelivery) => Promise<unknown>): Promise<number>;
  /** A delivery stored neither in the database nor here (answered 503): counted and kept for health. */
  refused(reason: string): void;
  health(): SpoolHealth;
  /** Called after every append; returns the unsubscribe. */
  onAppend(listener: () => void): () => void;
  close(): Promise<void>;
}

export interface SpoolHealth {
  dir: string;
  /** Deliveries waiting in the spool for the database. */
  pending: number;
  /** Bytes of segments on disk. */
  bytes: number;
  /** When the oldest waiting delivery was received; null when none waits. */
  oldestReceivedAt: number | null;
  /** Why the last drain stopped (the database's error), until one succeeds. */
  lastDrainError: string | null;
  /** Deliveries answered 503 by this process: stored neither in the database nor in the spool. */
  refused: number;
  lastRefusal: { at: number; reason: string } | null;
  /** Spooled deliveries the database refused for good, kept in `rejected.log` for an operator. */
  setAside: number;
}

export interface SpoolOptions {
  dir: string;
  logger?: { error(details: Record<string, unknown>, message: string): void };
  now?: () => number;
  /** A segment is sealed once it holds this many bytes. @default 16 MiB */
  segmentBytes?: number;
}

interface Segment {
  seq: number;
  file: string;
  /** Offset up to which records are in the inbox. */
  done: number;
  size: number;
  /** Records past `done`. */
  records: number;
  oldestReceivedAt: number | null;
  handle?: fs.promises.FileHandle;
}

const SEGMENT = /^spool-(\d{12})\.log$/;
const DRAIN_CHUNK = 64;
/** Data the database refuses for good (SQLSTATE class 22, SQLite's type and size errors): retrying cannot help. */
const REJECTED_CODES = [/^22[0-9A-Z]{3}$/, /^SQLITE_(TOOBIG|MISMATCH)/];

export function createSpool(options: SpoolOptions): Spool {
  const { dir } = options;
  const now = options.now ?? Date.now;
  const segmentBytes = options.segmentBytes ?? 16 * 1024 * 1024;
  const listeners = new Set<() => void>();
  let segments: Segment[] = [];
  let active: Segment | undefined;
  let nextSeq = 1;
  let opened: Promise<void> | undefined;
  let inFlight = 0;
  let waiting: Array<{ bytes: Buffer; receivedAt: number; resolve: () => void; reject: (err: unknown) => void }> = [];
  let flushScheduled = false;
  /** Appends and seals, one at a time: a segment is never sealed under a write. */
  let writes: Promise<void> = Promise.resolve();
  let draining: Promise<number> | undefined;
  const health = { lastDrainError: null as string | null, refused: 0, lastRefusal: null as SpoolHealth['lastRefusal'], setAside: 0 };

  const pending = () => inFlight + segments.reduce((n, s) => n + s.records, 0);

  const open = () =>
    (opened ??= (async () => {
      await fs.promises.mkdir(dir, { recursive: true, mode: 0o700 });
      const names = (await fs.promises.readdir(dir)).filter((n) => SEGMENT.test(n)).sort();
      for (const name of names) {
        const seq = Number(SEGMENT.exec(name)![1]);
        nextSeq = Math.max(nextSeq, seq + 1);
        const file = path.join(dir, name);
        const buffer = await fs.promises.readFile(file);
        const done = await readDone(file, buffer.length);
        const { records } = decodeRecords(buffer, done);
        segments.push({
          seq,
          file,
          done,
          size: buffer.length,
          records: records.length,
          oldestReceivedAt: records[0]?.delivery.receivedAt ?? null,
        });
      }
    })());

  const chain = (step: () => Promise<void>): Promise<void> => {
    const next = writes.then(step);
    writes = next.catch(() => {});
    return next;
  };

  async function activeSegment(): Promise<Segment> {
    if (active && active.size < segmentBytes) return active;
    if (active) await seal(active);
    const seq = nextSeq++;
    const file = path.join(dir, `spool-${String(seq).padStart(12, '0')}.log`);
    const handle = await fs.promises.open(file, 'a', 0o600);
    // The new file's directory entry must survive a crash too, or its records go with it.
    await syncDirectory(dir);
    active = { seq, file, done: 0, size: 0, records: 0, oldestReceivedAt: null, handle };
    segments.push(active);
    return active;
  }

  async function seal(segment: Segment): Promise<void> {
    if (active === segment) active = undefined;
    const handle = segment.handle;
    segment.handle = undefined;
    await handle?.close().catch(() => {});
  }

  async function writeBatch(batch: typeof waiting): Promise<void> {
    await open();
    const segment = await activeSegment();
    const data = Buffer.concat(batch.map((w) => w.bytes));
    const before = segment.size;
    try {
      await segment.handle!.write(data);
      await segment.handle!.datasync();
    } catch (err) {
      // A partial record (the disk filled up mid-write) must not stay ahead of later ones: cut it
      // off, or if even that fails, leave this segment to be read up to it and start another.
      await segment.handle!.truncate(before).catch(() => seal(segment));
      throw err;
    }
    segment.size += data.length;
    segment.records += batch.length;
    segment.oldestReceivedAt ??= batch[0]!.receivedAt;
  }

  function flush(): void {
    flushScheduled = false;
    const batch = waiting;
    waiting = [];
    void chain(() => writeBatch(batch)).then(
      () => {
        inFlight -= batch.length;
        for (const w of batch) w.resolve();
        for (const listener of listeners) listener();
      },
      (err: unknown) => {
        inFlight -= batch.length;
        for (const w of batch) w.reject(err);
      },
    );
  }

  async function drainOnce(insert: (delivery: NewDelivery) => Promise<unknown>): Promise<number> {
    await open();
    let moved = 0;
    for (const segment of [...segments]) {
      if (segment === active) {
        if (segment.records === 0) continue;
        await chain(() => seal(segment));
      }
      const buffer = await fs.promises.readFile(segment.file);
      const { records, validEnd } = decodeRecords(buffer, segment.done);
      for (let i = 0; i < records.length; i += DRAIN_CHUNK) {
        const chunk = records.slice(i, i + DRAIN_CHUNK);
        // Inserted side by side, they share the inbox's group commit, in this order.
        const results = await Promise.allSettled(chunk.map((r) => insert(r.delivery)));
        let failure: unknown;
        let through = 0;
        for (const [j, result] of results.entries()) {
          if (result.status === 'rejected' && REJECTED_CODES.some((code) => code.test(codeOf(result.reason) ?? ''))) {
            await setAside(chunk[j]!.delivery, result.reason);
          } else if (result.status === 'rejected') {
            failure = result.reason;
            break;
          }
          through = j + 1;
        }
        if (through > 0) {
          segment.done = chunk[through - 1]!.end;
          segment.records -= through;
          segment.oldestReceivedAt = records[i + through]?.delivery.receivedAt ?? null;
          moved += through;
          await fs.promises.writeFile(`${segment.file}.done`, String(segment.done));
        }
        if (failure !== undefined) throw failure;
      }
      if (validEnd < buffer.length) {
        // What follows the last whole record: the torn tail of an append a crash cut short (never
        // answered 2xx), or damage. Kept beside the spool for an operator, never replayed blindly.
        const kept = `${segment.file}.torn`;
        await fs.promises.writeFile(kept, buffer.subarray(validEnd));
        options.logger?.error({ file: kept, bytes: buffer.length - validEnd }, 'spool segment ends in an incomplete record; kept aside');
      }
      await fs.promises.rm(segment.file, { force: true });
      await fs.promises.rm(`${segment.file}.done`, { force: true });
      segments = segments.filter((s) => s !== segment);
    }
    return moved;
  }

  async function setAside(delivery: NewDelivery, err: unknown): Promise<void> {
    health.setAside += 1;
    await fs.promises.appendFile(path.join(dir, 'rejected.log'), encodeRecord(delivery), { mode: 0o600 });
    options.logger?.error(
      { delivery: delivery.deliveryId, code: codeOf(err), err: errorMessage(err) },
      'the database refused a spooled delivery for good; kept in rejected.log',
    );
  }

  return {
    dir,
    open,
    append(delivery) {
      const bytes = encodeRecord(delivery);
      inFlight += 1;
      return new Promise<void>((resolve, reject) => {
        waiting.push({ bytes, receivedAt: delivery.receivedAt ?? now(), resolve, reject });
        // The appends of one event-loop turn share one write and one fsync.
        if (!flushScheduled) {
          flushScheduled = true;
          setImmediate(flush);
        }
      });
    },
    get pending() {
      return pending();
    },
    drain(insert) {
      draining ??= drainOnce(insert).then(
        (moved) => {
          draining = undefined;
          health.lastDrainError = null;
          return moved;
        },
        (err: unknown) => {
          draining = undefined;
          health.lastDrainError = errorMessage(err).slice(0, 500);
          throw err;
        },
      );
      return draining;
    },
    refused(reason) {
      health.refused += 1;
      health.lastRefusal = { at: now(), reason: reason.slice(0, 500) };
    },
    health() {
      const oldest = segments.map((s) => s.oldestReceivedAt).filter((t): t is number => t !== null && t !== undefined);
      return {
        dir,
        pending: pending(),
        bytes: segments.reduce((n, s) => n + s.size, 0),
        oldestReceivedAt: oldest.length ? Math.min(...oldest) : null,
        ...health,
      };
    },
    onAppend(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async close() {
      await writes;
      if (active) await seal(active);
    },
  };
}

async function readDone(file: string, size: number): Promise<number> {
  try {
    const done = Number((await fs.promises.readFile(`${file}.done`, 'utf8')).trim());
    return Number.isSafeInteger(done) && done >= 0 && done <= size ? done : 0;
  } catch {
    return 0;
  }
}

async function syncDirectory(dir: string): Promise<void> {
  const handle = await fs.promises.open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
