import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';

/**
 * Exclusive ownership of a spool slot for the life of the process: flock(2) on the slot's `lock`
 * file. The kernel lets go of it when the process ends, however it ends (kill -9 included), so a
 * slot whose lock can be taken belongs to no live process: no pid, start time or heartbeat to
 * judge, and no lock to steal from a process that is only slow. It holds across processes of one
 * machine whatever their pid namespaces (containers sharing a volume), and across machines on
 * file systems that pass locks on to their server (NFSv4, CephFS; Linux carries flock over NFS as
 * a whole-file fcntl lock). A file system without locks answers ENOLCK or EOPNOTSUPP, and the
 * spool refuses to start there rather than be shared unknowingly (NFS mounted `nolock` keeps
 * locks local to each machine and cannot be told apart: the documentation says so).
 *
 * Node has no binding for flock, so it is called through koffi (already baton's FFI for prctl).
 * The descriptor is opened by libuv with O_CLOEXEC: a local runner that outlives baton does not
 * inherit it, so it never keeps a dead server's slot locked.
 */

/** <sys/file.h>, the same on Linux, macOS and the BSDs. */
const LOCK_EX = 2;
const LOCK_NB = 4;

export class SpoolLockError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SpoolLockError';
  }
}

/** What the holder of a slot writes into its lock file, for the log lines of the others. */
export interface SlotOwner {
  pid: number;
  hostname: string;
  startedAt: string;
}

export interface HeldLock {
  readonly file: string;
  /** Replaces what the lock file says about its holder. */
  describe(owner: SlotOwner): void;
  release(): void;
}

type Flock = (fd: number, operation: number) => number;
interface Koffi {
  load(path: string | null): { func(signature: string): unknown };
  errno(): number;
}

let loaded: { flock: Flock; errno: () => number } | undefined;

function flockOf(): { flock: Flock; errno: () => number } {
  if (loaded) return loaded;
  try {
    // Loaded when first needed: only `serve` and the spool's tests lock anything.
    const koffi = createRequire(import.meta.url)('koffi') as Koffi;
    const flock = koffi.load(null).func('int flock(int fd, int operation)') as Flock;
    loaded = { flock, errno: () => koffi.errno() };
    return loaded;
  } catch (err) {
    throw new SpoolLockError(`flock(2) cannot be called on this platform (${process.platform}): ${(err as Error).message}`, { cause: err });
  }
}

/**
 * Takes `file`'s lock without waiting: the held lock, or null when another open file holds it
 * (another process, or another spool of this one) or the file went away meanwhile. Throws a
 * `SpoolLockError` when the file system cannot lock at all.
 */
export function tryLock(file: string): HeldLock | null {
  const { flock, errno } = flockOf();
  let fd: number;
  try {
    fd = fs.openSync(file, fs.constants.O_RDWR | fs.constants.O_CREAT, 0o600);
  } catch (err) {
    // The slot was removed by hand while we looked: nothing to own there.
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  if (flock(fd, LOCK_EX | LOCK_NB) !== 0) {
    const code = errno();
    fs.closeSync(fd);
    if (code === os.constants.errno.EWOULDBLOCK || code === os.constants.errno.EAGAIN) return null;
    const name = Object.entries(os.constants.errno).find(([, n]) => n === code)?.[0] ?? `errno ${code}`;
    throw new SpoolLockError(`flock(${file}) failed: ${name}`);
  }
  // The lock belongs to the file we opened; if the path now names another file (removed and made
  // again while we waited), holding this one owns nothing.
  const held = fs.fstatSync(fd);
  const now = statOrNull(file);
  if (!now || now.ino !== held.ino || now.dev !== held.dev) {
    fs.closeSync(fd);
    return null;
  }
  let released = false;
  return {
    file,
    describe(owner) {
      const text = Buffer.from(`${JSON.stringify(owner)}\n`);
      fs.ftruncateSync(fd, 0);
      fs.writeSync(fd, text, 0, text.length, 0);
    },
    release() {
      if (released) return;
      released = true;
      fs.closeSync(fd);
    },
  };
}

/** What a slot's lock file says about its holder (or last holder); null when it says nothing readable. */
export function readOwner(file: string): SlotOwner | null {
  try {
    const owner = JSON.parse(fs.readFileSync(file, 'utf8')) as Partial<SlotOwner>;
    return typeof owner.pid === 'number' && typeof owner.hostname === 'string' && typeof owner.startedAt === 'string'
      ? (owner as SlotOwner)
      : null;
  } catch {
    return null;
  }
}

function statOrNull(file: string): fs.Stats | null {
  try {
    return fs.statSync(file);
  } catch {
    return null;
  }
}
