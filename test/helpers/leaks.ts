/**
 * What a test leaves running: open files and sockets (a forgotten `store.close()` keeps the
 * SQLite file or the PostgreSQL pool's connections open, a forgotten `server.close()` keeps a
 * listening socket), child processes, and timers (an interval nobody cleared, a timeout that
 * still holds the process open). `test/setup/check-leaks.ts` compares a snapshot taken before
 * each test (and each file) with what is left afterwards and fails the test naming each leak.
 *
 * Files, sockets and processes are read from /proc, so they are seen whether or not Node still
 * holds a reference to them (an `unref()`ed server or detached child leaks as much as any
 * other); where /proc is missing (not Linux) those checks are off and only timers are checked.
 * Timers are tracked by wrapping the global timer functions once, before any test code runs;
 * Node's and vitest's own timers do not go through them.
 */
import fs from 'node:fs';

export interface Snapshot {
  /** `fd → what it points at` (a path, `socket:[inode]`, `pipe:[inode]`, …). */
  fds: Map<string, string>;
  /** Descendant processes by `pid:starttime` (a reused pid is another process). */
  processes: Map<string, ProcessInfo>;
  timers: Set<TrackedTimer>;
  /** How many timers had been created by then (see `TrackedTimer.seq`). */
  timerSeq: number;
}

interface ProcessInfo {
  pid: number;
  /** The `pid:starttime` key of its parent; this process's own pid when it is our child. */
  parent: string;
  command: string;
}

interface TrackedTimer {
  handle: NodeJS.Timeout;
  kind: 'setTimeout' | 'setInterval';
  ms: number;
  /** Where it was created: the first stack frame outside Node and this file. */
  site: string;
  /** Creation order, across all timers. */
  seq: number;
}

const PROC = fs.existsSync('/proc/self/fd');

interface TimerState {
  live: Set<TrackedTimer>;
  byHandle: WeakMap<object, TrackedTimer>;
  seq: number;
  /** Creation site → `seq` of the first timer made there. */
  firstAtSite: Map<string, number>;
  /** The unwrapped functions, for the checker's own waiting. */
  original: Pick<typeof globalThis, 'setTimeout' | 'setInterval' | 'clearTimeout' | 'clearInterval'>;
  installed: boolean;
}

// On globalThis: a worker process may evaluate this module once per test file, but the globals
// it wraps are the process's, so they are wrapped once and tracked in one place.
const state: TimerState = ((globalThis as Record<symbol, TimerState>)[Symbol.for('baton.test.timers')] ??= {
  live: new Set(),
  byHandle: new WeakMap(),
  seq: 0,
  firstAtSite: new Map(),
  original: {
    setTimeout: globalThis.setTimeout,
    setInterval: globalThis.setInterval,
    clearTimeout: globalThis.clearTimeout,
    clearInterval: globalThis.clearInterval,
  },
  installed: false,
});
const liveTimers = state.live;
const byHandle = state.byHandle;

/** The unwrapped timers, for waiting inside the checker without tracking itself. */
export const realTimers = state.original;

/** Wraps the global timer functions so timers created from now on are tracked until they end. */
export function trackTimers(): void {
  if (state.installed) return;
  state.installed = true;
  const original = state.original;
  const track = (kind: TrackedTimer['kind'], handle: NodeJS.Timeout, ms: unknown) => {
    const seq = ++state.seq;
    const site = creationSite();
    if (!state.firstAtSite.has(site)) state.firstAtSite.set(site, seq);
    const timer: TrackedTimer = { handle, kind, ms: Number(ms) || 0, site, seq };
    liveTimers.add(timer);
    byHandle.set(handle, timer);
  };
  const untrack = (handle: unknown) => {
    if (handle === null || handle === undefined) return;
    if (typeof handle === 'object') {
      const timer = byHandle.get(handle);
      if (timer) liveTimers.delete(timer);
      return;
    }
    // clearTimeout(id) with the number a timer turned into: find that timer.
    for (const timer of liveTimers) if (Number(timer.handle) === Number(handle)) liveTimers.delete(timer);
  };
  const wrapped = {
    setTimeout(callback: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) {
      if (typeof callback !== 'function') return original.setTimeout(callback, ms, ...args);
      const handle: NodeJS.Timeout = original.setTimeout(
        (...a: unknown[]) => {
          // A fired timeout is over, unless the callback re-arms it with refresh().
          untrack(handle);
          callback(...a);
        },
        ms,
        ...args,
      );
      track('setTimeout', handle, ms);
      return handle;
    },
    setInterval(callback: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) {
      const handle = original.setInterval(callback, ms, ...args);
      track('setInterval', handle, ms);
      return handle;
    },
    clearTimeout(handle?: unknown) {
      untrack(handle);
      original.clearTimeout(handle as NodeJS.Timeout);
    },
    clearInterval(handle?: unknown) {
      untrack(handle);
      original.clearInterval(handle as NodeJS.Timeout);
    },
  };
  // Keep util.promisify(setTimeout) and friends working.
  Object.assign(wrapped.setTimeout, original.setTimeout);
  Object.assign(wrapped.setInterval, original.setInterval);
  Object.assign(globalThis, wrapped);
  // refresh() re-arms a timeout that may already have fired.
  const probe = original.setTimeout(() => {}, 0);
  original.clearTimeout(probe);
  const prototype = Object.getPrototypeOf(probe) as { refresh(this: NodeJS.Timeout): NodeJS.Timeout };
  const refresh = prototype.refresh;
  prototype.refresh = function (this: NodeJS.Timeout) {
    const timer = byHandle.get(this);
    if (timer) liveTimers.add(timer);
    return refresh.call(this);
  };
}

export function takeSnapshot(): Snapshot {
  return { fds: openFds(), processes: descendants(), timers: new Set(liveTimers), timerSeq: state.seq };
}

/**
 * A description of each thing opened or started since `before` and still there. With
 * `ownTimeoutsOnly`, a pending timeout made where timers were made before `before` is left out:
 * a component that outlives the test (an app started in beforeAll) arms its next timeout from
 * the same place during every test; it is checked when its file ends.
 */
export function findLeaks(before: Snapshot, options: { ownTimeoutsOnly?: boolean } = {}): string[] {
  const leaks: string[] = [];

  const processes = descendants();
  const started = new Map([...processes].filter(([key]) => !before.processes.has(key)));
  // Ours are the processes this one started, and what they started in turn. A process that a
  // longer-lived one started meanwhile (a browser from beforeAll opening a helper process)
  // belongs to that one and ends with it.
  const ours = (key: string): boolean => {
    const parent = started.get(key)!.parent;
    return parent === SELF || (started.has(parent) && ours(parent));
  };
  const newProcesses = [...started].filter(([key]) => ours(key));
  for (const [key, info] of newProcesses) {
    if (started.has(info.parent)) continue; // reported as part of its parent
    const below = newProcesses.filter(([k]) => k !== key && isBelow(k, key, started)).length;
    leaks.push(`child process ${info.pid} still running${below ? ` (with ${below} it started)` : ''}: ${info.command}`);
  }

  const fds = openFds();
  const opened = [...fds].filter(([fd, target]) => before.fds.get(fd) !== target).map(([, target]) => target);
  const sockets = opened.filter((t) => t.startsWith('socket:['));
  if (sockets.length > 0) leaks.push(...describeSockets(sockets, fds, processes));
  for (const target of opened) {
    if (target.startsWith('/') && !target.startsWith('/dev/') && !target.startsWith('/proc/')) leaks.push(`open file ${target}`);
  }
  // A leaked child's stdio pipes are reported as the child.
  const pipes = opened.filter((t) => t.startsWith('pipe:['));
  if (pipes.length > 0 && newProcesses.length === 0) leaks.push(`${pipes.length} open pipe(s) (${pipes.join(', ')})`);

  for (const timer of liveTimers) {
    if (before.timers.has(timer)) continue;
    // A pending timeout that does not hold the process open fires on its own and is harmless;
    // an interval never ends by itself.
    if (timer.kind === 'setTimeout' && !timer.handle.hasRef()) continue;
    if (options.ownTimeoutsOnly && timer.kind === 'setTimeout' && state.firstAtSite.get(timer.site)! <= before.timerSeq) continue;
    const what = timer.kind === 'setInterval' ? `a setInterval every ${timer.ms} ms` : `a pending setTimeout of ${timer.ms} ms`;
    leaks.push(`${what}${timer.handle.hasRef() ? '' : ' (unref)'}, created at ${timer.site}`);
  }
  return leaks;
}

/**
 * `findLeaks` after giving closing things a moment to finish (a closed socket's fd goes away a
 * tick or two later): checks until nothing is left or `settleMs` has passed.
 */
export async function leaksAfterSettling(
  before: Snapshot,
  settleMs: number,
  options: { ownTimeoutsOnly?: boolean } = {},
): Promise<string[]> {
  const deadline = Date.now() + settleMs;
  for (;;) {
    const leaks = findLeaks(before, options);
    if (leaks.length === 0 || Date.now() >= deadline) return leaks;
    await new Promise((resolve) => realTimers.setTimeout(resolve, 20));
  }
}

function openFds(): Map<string, string> {
  const fds = new Map<string, string>();
  if (!PROC) return fds;
  for (const fd of fs.readdirSync('/proc/self/fd')) {
    try {
      fds.set(fd, fs.readlinkSync(`/proc/self/fd/${fd}`));
    } catch {
      // closed while we looked (or the fd of the directory listing itself)
    }
  }
  return fds;
}

const SELF = String(process.pid);

/** Every process below this one, keyed by pid and start time so a reused pid is another process. */
function descendants(): Map<string, ProcessInfo> {
  const found = new Map<string, ProcessInfo>();
  if (!PROC) return found;
  const children = new Map<number, Array<{ pid: number; start: string }>>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue;
    }
    // pid (comm) state ppid … starttime is field 22; comm may contain spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (fields[0] === 'Z' || fields[0] === 'X') continue;
    const ppid = Number(fields[1]);
    const list = children.get(ppid) ?? [];
    list.push({ pid: Number(entry), start: fields[19] ?? '' });
    children.set(ppid, list);
  }
  const queue: Array<{ pid: number; key: string }> = [{ pid: process.pid, key: SELF }];
  while (queue.length > 0) {
    const parent = queue.shift()!;
    for (const child of children.get(parent.pid) ?? []) {
      let command = '';
      try {
        command = fs.readFileSync(`/proc/${child.pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
      } catch {
        continue;
      }
      const key = `${child.pid}:${child.start}`;
      found.set(key, { pid: child.pid, parent: parent.key, command: command.length > 200 ? `${command.slice(0, 200)}…` : command });
      queue.push({ pid: child.pid, key });
    }
  }
  return found;
}

function isBelow(key: string, ancestor: string, processes: Map<string, ProcessInfo>): boolean {
  for (let parent = processes.get(key)?.parent; parent !== undefined; parent = processes.get(parent)?.parent) {
    if (parent === ancestor) return true;
  }
  return false;
}

interface SocketInfo {
  local: string;
  remote: string;
  localPort: number;
  remotePort: number;
  listening: boolean;
}

/**
 * Names the new sockets. A connection to a server that is still open in this process or one of
 * its children belongs to that server (an HTTP keep-alive connection is closed with it), so it
 * is not a leak of its own: the server is reported if it leaks.
 */
function describeSockets(sockets: string[], fds: Map<string, string>, processes: Map<string, ProcessInfo>): string[] {
  const table = new Map<string, SocketInfo>();
  for (const file of ['/proc/self/net/tcp', '/proc/self/net/tcp6']) {
    let text = '';
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10 || f[9] === '0') continue;
      const [local, localPort] = address(f[1]!);
      const [remote, remotePort] = address(f[2]!);
      table.set(f[9]!, { local, remote, localPort, remotePort, listening: f[3] === '0A' });
    }
  }
  const ownInodes = new Set([...fds.values()].map(inodeOf));
  for (const { pid } of processes.values()) {
    try {
      for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) ownInodes.add(inodeOf(fs.readlinkSync(`/proc/${pid}/fd/${fd}`)));
    } catch {
      // the child ended meanwhile
    }
  }
  const ownListeningPorts = new Set([...table].filter(([inode, s]) => s.listening && ownInodes.has(inode)).map(([, s]) => s.localPort));
  const leaks: string[] = [];
  for (const target of sockets) {
    const socket = table.get(inodeOf(target));
    if (!socket) continue; // not TCP (a Unix socket pair, or already closing)
    if (socket.listening) leaks.push(`a server listening on ${socket.local}:${socket.localPort}`);
    else if (!ownListeningPorts.has(socket.remotePort) && !ownListeningPorts.has(socket.localPort))
      leaks.push(`a connection from ${socket.local}:${socket.localPort} to ${socket.remote}:${socket.remotePort}`);
  }
  return leaks;
}

const inodeOf = (target: string) => /^socket:\[(\d+)\]$/.exec(target)?.[1] ?? '';

/** `0100007F:1F90` → ['127.0.0.1', 8080]: the kernel writes each 32-bit word of the address in host order. */
function address(hex: string): [string, number] {
  const [host = '', port = '0'] = hex.split(':');
  const bytes = (host.match(/.{8}/g) ?? []).flatMap((word) => (word.match(/../g) ?? []).reverse().map((b) => parseInt(b, 16)));
  const v4 = (b: number[]) => b.join('.');
  let ip: string;
  if (bytes.length === 4) ip = v4(bytes);
  else if (bytes.slice(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff) ip = `::ffff:${v4(bytes.slice(12))}`;
  else ip = `[${Array.from({ length: 8 }, (_, i) => ((bytes[2 * i]! << 8) | bytes[2 * i + 1]!).toString(16)).join(':')}]`;
  return [ip, parseInt(port, 16)];
}

/** The first stack frame outside this file and Node's internals: where the test or the code made it. */
function creationSite(): string {
  // Only a few frames are needed; formatting fewer keeps timers cheap.
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 6;
  const stack = new Error().stack ?? '';
  Error.stackTraceLimit = limit;
  const frame = stack
    .split('\n')
    .slice(1)
    .find((f) => !f.includes('/test/helpers/leaks.ts') && !f.includes('node:internal') && !f.includes('node:timers'));
  return frame ? frame.trim().replace(/^at /, '') : '(unknown place)';
}
