import { spawn as nodeSpawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import path from 'node:path';
import type { RunnerSecrets } from '../../runner-contract/index.js';
import type { RunCredential, RunUser } from './credentials.js';
import { createRunGates, type LocalEgressOptions, type RunGates } from './egress.js';
import type { UidRange } from './run-users.js';

export interface LocalProviderOptions {
  /** Workspaces are directories under `<dataDir>/workspaces/`. */
  dataDir: string;
  /**
   * The runner command; the workspace's env carries the run, a descriptor its secrets.
   * @example [process.execPath, '/opt/baton/bin/baton.js', 'agent']
   */
  command: readonly string[];
  /**
   * Extra env for every runner (e.g. `BATON_INSTALL_COMMAND`). The run's own variables take
   * precedence. Secrets given here (`CLAUDE_CODE_OAUTH_TOKEN`, …) are moved to the runner's
   * secrets, never passed as environment.
   */
  env?: Record<string, string>;
  /** Secrets every runner gets besides the run's own, e.g. `CLAUDE_CODE_OAUTH_TOKEN`. */
  secrets?: RunnerSecrets;
  /**
   * Variables of baton's own environment passed through. The server's env holds its secrets
   * (bot tokens, database URL), so only these go to the runner.
   * @default ['PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'LANG', 'LC_ALL', 'TZ', 'TMPDIR', 'NODE_EXTRA_CA_CERTS', 'SSL_CERT_FILE', 'HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY', 'http_proxy', 'https_proxy', 'no_proxy']
   */
  inheritEnv?: readonly string[];
  /** Port of each runner's live log page (`BATON_AGENT_LOG_PORT`); 0 = off, as several runners share the host. @default 0 */
  logPort?: number;
  /** Time between SIGTERM and SIGKILL of a runner on stop/delete. @default 15_000 */
  stopGraceMs?: number;
  /**
   * How runs are isolated from baton and from each other. `none` runs them as baton's own user,
   * seeing everything baton sees: only for machines where nothing else matters.
   * @default { kind: 'bwrap' }
   */
  sandbox?: LocalSandboxOptions | { kind: 'none' };
  /**
   * The niceness runs start at (`nice`), with best-effort I/O priority 7 (`ionice`) when above 0:
   * a busy agent, its build and its tests must not take the CPU and the disk from baton's accept
   * path (the forge gives a webhook 5 s). Set before the runner starts, so everything it starts
   * inherits it; a missing `nice` or `ionice` is skipped. @default 10
   */
  runnerNice?: number;
  /**
   * The network of sandboxed runs: each has a namespace of its own and reaches only its egress
   * gate (see src/egress/), or, with `false`, the host's network as it is.
   * @default {} (a gate that lets a run reach only its own callbacks)
   */
  egress?: LocalEgressOptions | false;
  /**
   * Run like a runner (same sandbox, same env, no secrets) to tell whether runs can start, for
   * `/ready` and before each run while the last check failed. Exit 0 means ready; otherwise its
   * last output line is the reason.
   * @default ['true']
   * @example [process.execPath, '/opt/baton/bin/baton.js', 'agent', '--check']
   */
  check?: readonly string[];
  now?: () => number;
  spawn?: (command: string, args: readonly string[], options: SpawnOptions) => ChildProcess;
  /** Problems in background work (deleting a directory failed, …). */
  onError?: (message: string, error: unknown) => void;
}

export interface LocalSandboxOptions {
  kind: 'bwrap';
  /** The bubblewrap binary, looked up on baton's PATH. @default 'bwrap' */
  bwrap?: string;
  /** Host paths visible read-only at the same path: Node.js, baton's code, the agent CLI, toolchains. */
  readOnlyPaths?: readonly string[];
  /** Host paths never visible, even inside a read-only path (the data directory always is). */
  hiddenPaths?: readonly string[];
  /** Copied into each run's home as ~/.gitconfig (see handCredentials). */
  gitConfig?: string;
  /**
   * A logged-in Claude Code's `.credentials.json`, copied into each run's home as
   * ~/.claude/.credentials.json (see handCredentials). Claude Code keeps its login there on Linux,
   * as third-party account switchers such as rsnodgrass/claude-code-auth and mr3od/claude-auth
   * document.
   */
  claudeCredentials?: string;
  /**
   * The host user runs are when baton itself runs as root: a sandbox never maps to root, whose
   * files (and /proc entries) it could otherwise read. Baton's own user otherwise.
   * @default { uid: 65534, gid: 65534 } (nobody)
   */
  rootUser?: { uid: number; gid: number };
  /**
   * When baton runs as root: each run gets a uid (and gid) of its own from this range instead of
   * `rootUser`, so runs cannot read each other's files, nor can any host process of `nobody`.
   * @example { first: 200000, last: 265535 }
   */
  runUids?: UidRange;
}

/** What the local provider resolves from its options once, shared by its steps. */
export interface LocalContext {
  options: LocalProviderOptions;
  /** `<dataDir>/workspaces`: one directory per workspace (see layout.ts). */
  root: string;
  now: () => number;
  spawn: (command: string, args: readonly string[], options: SpawnOptions) => ChildProcess;
  graceMs: number;
  onError: (message: string, error: unknown) => void;
  sandbox: LocalSandboxOptions | { kind: 'none' };
  /** The user runs are when baton runs as root; undefined: baton's own. */
  runAs: RunUser | undefined;
  /** A uid of its own per run (as root, `local.runUids`). */
  runUids: UidRange | undefined;
  /** Login files every run gets a copy of in its home (see handCredentials). */
  runCredentials: readonly RunCredential[];
  gates: RunGates | null;
  /** Uids being given to runs right now (before their directories say so). */
  reservedUids: Set<number>;
}

export function createLocalContext(options: LocalProviderOptions): LocalContext {
  const onError = options.onError ?? (() => {});
  const sandbox = options.sandbox ?? { kind: 'bwrap' };
  // Root's files and root's processes must never be the sandbox's own: as root, runs are another
  // user. It is also what lets the nested sandbox of each step mount its /proc: mapped to root,
  // bwrap covers /proc/irq and /proc/bus with read-only mounts (bubblewrap.c, cover_proc_dirs),
  // which become locked in a nested user namespace, and the kernel then refuses a new proc mount.
  const runAs = sandbox.kind === 'bwrap' && process.getuid?.() === 0 ? (sandbox.rootUser ?? { uid: 65534, gid: 65534 }) : undefined;
  const runCredentials: RunCredential[] = [];
  if (sandbox.kind === 'bwrap' && sandbox.gitConfig)
    runCredentials.push({ setting: 'local.gitConfig', source: sandbox.gitConfig, target: '.gitconfig' });
  if (sandbox.kind === 'bwrap' && sandbox.claudeCredentials)
    runCredentials.push({ setting: 'local.claudeCredentials', source: sandbox.claudeCredentials, target: '.claude/.credentials.json' });
  const gates = sandbox.kind === 'bwrap' && options.egress !== false ? createRunGates({ egress: options.egress ?? {}, onError }) : null;
  return {
    options,
    root: path.resolve(options.dataDir, 'workspaces'),
    now: options.now ?? Date.now,
    spawn: options.spawn ?? nodeSpawn,
    graceMs: options.stopGraceMs ?? 15_000,
    onError,
    sandbox,
    runAs,
    runUids: runAs && sandbox.kind === 'bwrap' ? sandbox.runUids : undefined,
    runCredentials,
    gates,
    reservedUids: new Set<number>(),
  };
}
