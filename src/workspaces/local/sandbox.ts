import fs from 'node:fs';
import path from 'node:path';

/**
 * What a local run sees, as bubblewrap (`bwrap`) arguments. Built by binding in what a runner
 * needs, never by binding `/` and hiding things:
 *
 * - read-only: `/usr` (and the `/bin`, `/lib`… links or directories of the host), a short list of
 *   `/etc` files (users, name resolution, CA certificates, time zone, dynamic linker), Node.js,
 *   baton's own code, and the operator's `readOnlyPaths`;
 * - writable: the run's workspace at `/workspace`, its home at `/home/baton`, a private `/tmp`;
 * - its own user, PID, IPC, UTS, cgroup and network namespaces, a `/proc` that shows only the
 *   run's processes, a minimal `/dev`. The network namespace has only its own loopback: the way
 *   out is the run's egress gate, a unix socket in `egressDir` bound at `/run/baton` (see
 *   src/egress/). Without `egressDir` the network is the host's (`egress.gate: off`).
 *
 * Everything else (baton's data directory and database, its config file, other runs'
 * workspaces, the processes of baton and of other runs) does not exist inside. Paths that must
 * stay hidden but lie inside a bound directory are covered (`hidden`).
 *
 * How bwrap behaves here (containers/bubblewrap, bubblewrap.c at v0.11.1, checked against 0.8.0
 * installed): the outer process ("monitor") exits as soon as the command (pid 2) does, with its
 * status; the namespace's init (pid 1) waits for every process in it, and when it dies the kernel
 * kills them all; `--info-fd` reports the init's host pid right after the namespaces exist;
 * descriptors baton passes are inherited by the command and closed in the monitor and the init.
 */
export const SANDBOX_WORKDIR = '/workspace';
export const SANDBOX_HOME = '/home/baton';
/** Where a run sees its egress gate's directory; the socket in it is `egress.sock`. */
export const SANDBOX_EGRESS_DIR = '/run/baton';

/**
 * /etc entries a runner, git, Node.js and common build tools need. Not `/etc` itself: an
 * operator's secrets live there (baton's own config file, TLS keys under /etc/ssl/private).
 */
const ETC_ENTRIES = [
  'passwd',
  'group',
  'nsswitch.conf',
  'hosts',
  'host.conf',
  'resolv.conf',
  'gai.conf',
  'services',
  'protocols',
  'localtime',
  'timezone',
  'ssl/certs',
  'ssl/openssl.cnf',
  'ca-certificates',
  'ca-certificates.conf',
  'pki/tls/certs',
  'pki/ca-trust',
  'crypto-policies',
  'alternatives',
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
  'gitconfig',
  'mime.types',
  'os-release',
  'debian_version',
];

/** Top-level directories that are links into /usr on merged-/usr systems, or real directories elsewhere. */
const ROOT_ENTRIES = ['bin', 'sbin', 'lib', 'lib32', 'lib64', 'libx32'];

export interface SandboxLayout {
  /** Host directory of the run's workspace, writable at /workspace. */
  workDir: string;
  /** Host directory of the run's home, writable at /home/baton. */
  homeDir: string;
  /** Host paths visible read-only at the same path (Node.js, baton's code, operator extras). */
  readOnly: readonly string[];
  /** Host paths that must not be visible; covered when they lie inside a read-only path. */
  hidden: readonly string[];
  /**
   * Host directory holding the run's egress gate socket, bound at /run/baton. Given, the run gets a
   * network namespace of its own (only its loopback); the directory, not the socket, is bound, so
   * a gate re-created after a baton restart is the one the run sees.
   */
  egressDir?: string;
  /**
   * The uid and gid the run has inside its user namespace, when its host uid (one of
   * `local.runUids`) has no entry in /etc/passwd: tools that look their user up (Node's
   * os.userInfo, ssh) find `nobody` instead of failing.
   */
  insideUser?: { uid: number; gid: number };
}

/** Everything between `bwrap` and `--`: the sandbox of one run. */
export function sandboxArguments(layout: SandboxLayout): string[] {
  // Order matters: a later mount covers an earlier one, so the private /tmp comes before any
  // read-only path under /tmp, and the hidden paths last.
  const network = layout.egressDir ? ['--bind', layout.egressDir, SANDBOX_EGRESS_DIR] : ['--share-net'];
  const identity = layout.insideUser ? ['--uid', String(layout.insideUser.uid), '--gid', String(layout.insideUser.gid)] : [];
  const args = [
    '--unshare-all',
    ...identity,
    ...network,
    '--tmpfs',
    '/tmp',
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--ro-bind',
    '/usr',
    '/usr',
  ];
  for (const entry of ROOT_ENTRIES) {
    const host = `/${entry}`;
    const link = readLink(host);
    if (link !== null) args.push('--symlink', link, host);
    else args.push('--ro-bind-try', host, host);
  }
  for (const entry of ETC_ENTRIES) args.push('--ro-bind-try', `/etc/${entry}`, `/etc/${entry}`);
  args.push('--bind', layout.workDir, SANDBOX_WORKDIR, '--bind', layout.homeDir, SANDBOX_HOME);
  const readOnly = [...new Set(layout.readOnly.map((p) => path.resolve(p)))].filter((p) => !isInside(p, '/usr'));
  const hiddenPaths = layout.hidden.map((p) => path.resolve(p));
  for (const source of readOnly) {
    const inside = hiddenPaths.find((hidden) => isInside(source, hidden));
    if (inside) throw new Error(`${source} cannot be visible to runs: it is inside ${inside}, which runs must not see`);
    args.push('--ro-bind', source, source);
  }
  for (const hidden of hiddenPaths) {
    if (!readOnly.some((source) => isInside(hidden, source))) continue;
    // A directory becomes an empty tmpfs, a file /dev/null: either way nothing of it is readable.
    if (isDirectory(hidden)) args.push('--tmpfs', hidden);
    else if (fs.existsSync(hidden)) args.push('--ro-bind', '/dev/null', hidden);
  }
  args.push('--chdir', SANDBOX_WORKDIR);
  return args;
}

/**
 * The host paths a runner started as `[node, <baton>/bin/baton.js, 'agent']` needs read-only:
 * Node.js's installation when it is not under /usr, and baton's package (its code and
 * dependencies, not the directory it happens to be started in, which may hold data and config).
 */
export function runtimePaths(execPath: string, batonBin: string): string[] {
  const paths: string[] = [];
  const nodePrefix = path.dirname(path.dirname(fs.realpathSync(execPath)));
  if (!isInside(nodePrefix, '/usr')) paths.push(nodePrefix);
  const packageRoot = path.dirname(path.dirname(fs.realpathSync(batonBin)));
  for (const entry of ['package.json', 'bin', 'dist', 'assets', 'node_modules']) {
    const p = path.join(packageRoot, entry);
    if (fs.existsSync(p)) paths.push(p);
  }
  // Installed as a dependency, baton's own dependencies may sit in the node_modules above it.
  if (path.basename(path.dirname(packageRoot)) === 'node_modules') paths.push(path.dirname(packageRoot));
  else if (path.basename(path.dirname(path.dirname(packageRoot))) === 'node_modules') {
    paths.push(path.dirname(path.dirname(packageRoot)));
  }
  return paths;
}

export function isInside(child: string, parent: string): boolean {
  const relative = path.relative(parent, child);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

function readLink(p: string): string | null {
  try {
    return fs.readlinkSync(p);
  } catch {
    return null;
  }
}

function isDirectory(p: string): boolean {
  try {
    return fs.statSync(p).isDirectory();
  } catch {
    return false;
  }
}
