import { createRequire } from 'node:module';

/**
 * The runner holds the run's callback token (and the agent's key) in its memory. Without the
 * nested sandbox the agent and the repository's commands run as the runner's uid, and a process
 * may read the memory and environment of any dumpable process of its own uid
 * (`/proc/<pid>/mem`, `/proc/<pid>/environ`, ptrace, process_vm_readv). Two doors, two locks:
 *
 * - prctl(PR_SET_DUMPABLE, 0): the kernel then lets only a holder of CAP_SYS_PTRACE in, whatever
 *   the uid (ptrace(2), "Ptrace access mode checking"; proc(5) on /proc/pid files of a
 *   non-dumpable process). Node has no binding for prctl, so it is called through koffi, an FFI
 *   package with prebuilt binaries for Linux (glibc and musl, x64 and arm64). It is not inherited
 *   across execve, so the runner's children (the agent included) are dumpable as usual.
 * - SIGUSR1: Node opens its inspector on 127.0.0.1:9229 when it receives it, and any process of
 *   the same uid may send it; the inspector runs code in the runner. A listener of its own makes
 *   Node keep the signal (Node 20 has no --disable-sigusr1).
 */

/** linux/prctl.h */
const PR_GET_DUMPABLE = 3;
const PR_SET_DUMPABLE = 4;

export interface MemoryGuard {
  /** Whether the process is now non-dumpable. */
  undumpable: boolean;
  /** Why it could not be made so. */
  problem?: string;
}

type Prctl = (option: number, arg2: number, arg3: number, arg4: number, arg5: number) => number;
/** The part of koffi's API used here (its own types need the package installed to compile). */
interface Koffi {
  load(path: string | null): { func(signature: string): unknown };
}

/** Closes this process to others of its uid: non-dumpable, and SIGUSR1 does not open the inspector. */
export function guardProcessMemory(): MemoryGuard {
  process.on('SIGUSR1', () => {});
  return makeUndumpable();
}

/** prctl(PR_SET_DUMPABLE, 0), read back with PR_GET_DUMPABLE. */
export function makeUndumpable(): MemoryGuard {
  if (process.platform !== 'linux') return { undumpable: false, problem: `not Linux (${process.platform}): no PR_SET_DUMPABLE` };
  let prctl: Prctl;
  try {
    prctl = loadPrctl();
  } catch (err) {
    return { undumpable: false, problem: `prctl cannot be called through koffi: ${(err as Error).message}` };
  }
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) !== 0) return { undumpable: false, problem: 'prctl(PR_SET_DUMPABLE, 0) failed' };
  const dumpable = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
  return dumpable === 0 ? { undumpable: true } : { undumpable: false, problem: `PR_GET_DUMPABLE still says ${dumpable}` };
}

function loadPrctl(): Prctl {
  // Loaded when called: a platform without koffi's binary still runs, and says so.
  const koffi = createRequire(import.meta.url)('koffi') as Koffi;
  // The process's own symbols: libc's prctl, whichever libc Node is linked against.
  const self = koffi.load(null);
  return self.func('int prctl(int option, unsigned long arg2, unsigned long arg3, unsigned long arg4, unsigned long arg5)') as Prctl;
}
