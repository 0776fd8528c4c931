import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { codeOf, errorMessage } from '../../background/index.js';
import type { NewDelivery } from '../inbox/index.js';
import { decodeRecords, encodeRecord } from './format.js';
import { readOwner, tryLock, type HeldLock } from './lock.js';
import { claimSlot, SLOT, syncDirectory } from './slots.js';

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
 * One spool directory (webhooks.spoolDir) serves every process pointed at it: each owns a slot,
 * `slot-<n>/`, for its whole life, by an exclusive flock on `slot-<n>/lock` (./lock.ts), and only
 * the owner appends to or drains a slot. A process takes the first slot nobody holds (so a
 * restarted replica gets its own back, and drains it first) or makes a new one; two `baton serve`
 * on one data directory, or pods of a Deployment on one shared volume, each get their own. A slot
 * whose owner died (its lock free again) is taken over by whichever live process locks it first,
 * at start or on a later pass: its segments are moved, each by one rename, into that process's
 * own slot, so each is drained by one process, once. Slots are kept (a later process reuses
 * them), so their number stays that of the processes that ran at once.
 *
 * What it promises: a delivery answered 2xx survives a crash or kill -9 of baton and a reboot of
 * the machine (the fsync). What it does not: the loss of the replica's disk, or of the replica
 * itself for good, with its spool (use a persistent volume for the data directory).
 */
export interface Spool {
  /** The spool directory every process shares (webhooks.spoolDir). */
  readonly root: string;
  /** This process's own slot in it once open (`<root>/slot-<n>`); the root before. */
  readonly dir: string;
  /**
   * Takes this process's slot, reads what an earlier owner left in it, and takes over the slots of
   * processes that ended; idempotent, and tried again by the next call after a failure. Appends
   * and drains open it themselves. Rejects with a `SpoolLockError` when the directory's file
   * system cannot lock (the spool could be shared).
   */
  open(): Promise<void>;
  /**
   * Takes over the slots whose owners ended since (their lock free): their deliveries join this
   * spool, behind what it holds. Resolves to how many it took.
   */
  adopt(): Promise<number>;
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
  /** Deliveries this process took over from the slots of processes that ended. */
  adopted: number;
}

export interface SpoolOptions {
  /** The spool directory, shared by every process pointed at it; each owns a slot inside. */
  dir: string;
  logger?: {
    error(details: Record<string, unknown>, message: string): void;
    info?(details: Record<string, unknown>, message: string): void;
  };
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
/** A segment and its companions (`.done`, `.torn`): none of their numbers is given out again. */
const SEGMENT_FILE = /^spool-(\d{12})\.log(\.done|\.torn)?$/;
const DRAIN_CHUNK = 64;
/** Data the database refuses for good (SQLSTATE class 22, SQLite's type and size errors): retrying cannot help. */
const REJECTED_CODES = [/^22[0-9A-Z]{3}$/, /^SQLITE_(TOOBIG|MISMATCH)/];

export function createSpool(options: SpoolOptions): Spool {
  const root = options.dir;
  const now = options.now ?? Date.now;
  const segmentBytes = options.segmentBytes ?? 16 * 1024 * 1024;
  const listeners = new Set<() => void>();
  /** This process's slot once open; until then nothing is written. */
  let dir = root;
  let lock: HeldLock | undefined;
  let segments: Segment[] = [];
  let active: Segment | undefined;
  let nextSeq = 1;
  let opened: Promise<void> | undefined;
  let inFlight = 0;
  let waiting: Array<{ bytes: Buffer; receivedAt: number; resolve: () => void; reject: (err: unknown) => void }> = [];
  let flushScheduled = false;
  /** Appends, seals and takeovers, one at a time: a segment is never sealed under a write. */
  let writes: Promise<void> = Promise.resolve();
  let draining: Promise<number> | undefined;
  const health = {
    lastDrainError: null as string | null,
    refused: 0,
    lastRefusal: null as SpoolHealth['lastRefusal'],
    setAside: 0,
    adopted: 0,
  };

  const pending = () => inFlight + segments.reduce((n, s) => n + s.records, 0);

  const open = () =>
    (opened ??= (async () => {
      await fs.promises.mkdir(root, { recursive: true, mode: 0o700 });
      const claimed = await claimSlot(root);
      dir = claimed.dir;
      lock = claimed.lock;
      lock.describe({ pid: process.pid, hostname: os.hostname(), startedAt: new Date(now()).toISOString() });
      await readOwnSlot();
      options.logger?.info?.(
        { dir, pending: pending(), ...(claimed.busy.length ? { others: claimed.busy } : {}) },
        claimed.busy.length
          ? 'spool: this process owns its own slot; the others are held by live processes'
          : 'spool: this process owns its slot',
      );
      // Before any append: what a dead process left is drained before what arrives now.
      await adoptDead();
    })().catch((err: unknown) => {
      // Nothing half-taken stays (a full disk, a directory it may not write): the next append or
      // drain pass starts over, and no slot stays locked by an attempt that failed.
      lock?.release();
      lock = undefined;
      dir = root;
      segments = [];
      opened = undefined;
      throw err;
    }));

  async function readOwnSlot(): Promise<void> {
    const names = (await fs.promises.readdir(dir)).sort();
    for (const name of names) {
      const match = SEGMENT_FILE.exec(name);
      // No number is given out twice, or a new segment would meet an old one's progress file.
      if (match) nextSeq = Math.max(nextSeq, Number(match[1]) + 1);
    }
    for (const name of names) {
      if (name.endsWith('.log.done') && !names.includes(name.slice(0, -'.done'.length))) {
        // The progress of a segment deleted (or moved away) just before a crash.
        await fs.promises.rm(path.join(dir, name), { force: true });
        continue;
      }
      const match = SEGMENT.exec(name);
      if (!match) continue;
      const file = path.join(dir, name);
      const buffer = await fs.promises.readFile(file);
      const done = await readDone(file, buffer.length);
      segments.push(segmentOf(Number(match[1]), file, done, buffer));
    }
  }

  function segmentOf(seq: number, file: string, done: number, buffer: Buffer): Segment {
    const { records } = decodeRecords(buffer, done);
    return { seq, file, done, size: buffer.length, records: records.length, oldestReceivedAt: records[0]?.delivery.receivedAt ?? null };
  }

  /**
   * Moves the segments of every slot whose owner ended (its lock free) into this one: one rename
   * each, under that slot's lock, so a segment is in one slot at any time and two live processes
   * never both take it. A crash midway leaves the rest where it was, for the next taker.
   */
  async function adoptDead(): Promise<number> {
    let taken = 0;
    // Segments directly in the spool directory: written before there were slots (0.1 builds of
    // the spool). Nobody owns them; each goes, by its rename, to one process.
    if ((await fs.promises.readdir(root)).some((n) => SEGMENT.test(n))) {
      try {
        if (active) await seal(active);
        const moved = await moveSegments(root);
        health.adopted += moved;
        if (moved > 0) options.logger?.info?.({ from: root, into: dir, deliveries: moved }, 'spool: took over segments from before slots');
        taken += moved;
      } catch (err) {
        options.logger?.error({ dir: root, err: errorMessage(err) }, 'spool: could not take over segments from before slots');
      }
    }
    for (const name of (await fs.promises.readdir(root)).filter((n) => SLOT.test(n)).sort()) {
      const other = path.join(root, name);
      if (other === dir) continue;
      try {
        taken += await adoptSlot(other);
      } catch (err) {
        // One unreadable slot must not hold up this process's own drain; the next pass tries again.
        options.logger?.error({ slot: other, err: errorMessage(err) }, 'spool: could not take over a slot');
      }
    }
    return taken;
  }

  async function adoptSlot(other: string): Promise<number> {
    // Most slots are a live process's, and empty: no lock to try for those.
    const files = await fs.promises.readdir(other).catch(() => [] as string[]);
    if (!files.some((n) => SEGMENT.test(n))) return 0;
    const lockFile = path.join(other, 'lock');
    // Read before locking: on NFS closing any other descriptor of a locked file drops the lock.
    const previous = readOwner(lockFile);
    const held = tryLock(lockFile);
    if (!held) return 0;
    try {
      // What is taken over goes behind what this process holds, and later appends behind it.
      if (active) await seal(active);
      const moved = await moveSegments(other);
      health.adopted += moved;
      options.logger?.info?.(
        { from: other, into: dir, deliveries: moved, ...(previous ? { previousOwner: previous } : {}) },
        'spool: took over the slot of a process that ended',
      );
      return moved;
    } finally {
      held.release();
    }
  }

  async function moveSegments(other: string): Promise<number> {
    let deliveries = 0;
    for (const name of (await fs.promises.readdir(other)).filter((n) => SEGMENT.test(n)).sort()) {
      const from = path.join(other, name);
      const buffer = await fs.promises.readFile(from).catch((err: NodeJS.ErrnoException) => {
        // Taken by another process meanwhile (only where no lock guards the files: before slots).
        if (err.code === 'ENOENT') return null;
        throw err;
      });
      if (!buffer) continue;
      const done = await readDone(from, buffer.length);
      const seq = nextSeq++;
      const file = path.join(dir, segmentName(seq));
      // Progress first, under the new name: a crash before the rename leaves it alone (removed at
      // the next open), one after leaves the segment with its progress.
      if (done > 0) await fs.promises.writeFile(`${file}.done`, String(done), { mode: 0o600 });
      try {
        await fs.promises.rename(from, file);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
        await fs.promises.rm(`${file}.done`, { force: true });
        continue;
      }
      await fs.promises.rm(`${from}.done`, { force: true });
      const segment = segmentOf(seq, file, done, buffer);
      segments.push(segment);
      deliveries += segment.records;
    }
    await syncDirectory(dir);
    await syncDirectory(other);
    return deliveries;
  }

  const chain = (step: () => Promise<void>): Promise<void> => {
    const next = writes.then(step);
    writes = next.catch(() => {});
    return next;
  };

  async function activeSegment(): Promise<Segment> {
    if (active && active.size < segmentBytes) return active;
    if (active) await seal(active);
    const seq = nextSeq++;
    const file = path.join(dir, segmentName(seq));
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
    root,
    get dir() {
      return dir;
    },
    open,
    async adopt() {
      await open();
      let taken = 0;
      await chain(async () => {
        taken = await adoptDead();
      });
      if (taken > 0) for (const listener of listeners) listener();
      return taken;
    },
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
      await opened?.catch(() => {});
      await writes;
      if (active) await seal(active);
      // The slot is free for the next process (a restart takes it back first).
      lock?.release();
    },
  };
}

function segmentName(seq: number): string {
  return `spool-${String(seq).padStart(12, '0')}.log`;
}

async function readDone(file: string, size: number): Promise<number> {
  try {
    const done = Number((await fs.promises.readFile(`${file}.done`, 'utf8')).trim());
    return Number.isSafeInteger(done) && done >= 0 && done <= size ? done : 0;
  } catch {
    return 0;
  }
}
