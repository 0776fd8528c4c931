import { spawn as nodeSpawn, type ChildProcess, type SpawnOptions, type StdioOptions } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { findCommand, formatRunnerEnv, formatRunnerSecrets, RUNNER_SECRETS, type RunnerSecrets } from '../../runner-contract/index.js';
import { PermanentError } from '../../background/index.js';
import { transientErrorCode, type Workspace, type WorkspaceProvider, type WorkspaceSpec, type WorkspaceStatus } from '../types.js';
import {
  isProcessAlive,
  isRunAlive,
  isRunnerAlive,
  processesWithEnv,
  readProcStat,
  readRunnerRecord,
  sandboxRunner,
  signalRunner,
  type RunnerRecord,
} from './runner-process.js';
import { handCredentials, type RunCredential } from './credentials.js';
import { createRunGates, EGRESS_DIR, type LocalEgressOptions } from './egress.js';
import { pickRunUser, type UidRange } from './run-users.js';
import { SANDBOX_HOME, SANDBOX_WORKDIR, sandboxArguments } from './sandbox.js';

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

const DEFAULT_INHERIT = [
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'SHELL',
  'LANG',
  'LC_ALL',
  'TZ',
  'TMPDIR',
  'NODE_EXTRA_CA_CERTS',
  'SSL_CERT_FILE',
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'NO_PROXY',
  'http_proxy',
  'https_proxy',
  'no_proxy',
];

const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const RECORD = 'runner.json';
const LOG = 'runner.log';
const EXIT = 'exit.json';
const STOP_MARKER = 'stop-requested';
/** Environment names that find a run's processes when no recorded pid does (see killLeftovers). */
const CLAIM_VARIABLE = 'BATON_WORKSPACE_CLAIM';
const WORKDIR_VARIABLE = 'BATON_WORKDIR';
const DELETE_MARKER = 'deleting';
/** What the runner sees of a workspace; the records above stay outside, out of its reach. */
const WORK = 'work';
const HOME = 'home';
const SECRETS = '.secrets';
/** Descriptor numbers in the runner: its secrets, and (sandbox) where bwrap tells its init's pid. */
const SECRETS_FD = 3;
const INFO_FD = 4;
/** Longest a readiness check may run before it counts as failed. */
const CHECK_TIMEOUT_MS = 60_000;
/** How long a check result is trusted: a failure is retried soon, a success re-checked now and then. */
const CHECK_RETRY_MS = 10_000;
const CHECK_REFRESH_MS = 5 * 60_000;

/**
 * The run's variables, as `baton agent` reads them (see src/cli/agent.ts). No secrets: those go
 * through `runnerSecrets`.
 */
export function runnerEnv(spec: WorkspaceSpec): Record<string, string> {
  return formatRunnerEnv({
    stage: spec.stage,
    runId: spec.runId,
    issueNumber: spec.number,
    forgeUrl: spec.forgeUrl,
    owner: spec.owner,
    repo: spec.repo,
    cloneUrl: spec.cloneUrl,
    arguments: spec.arguments,
    branch: spec.ref,
    deployEnv: spec.deployEnv,
    callbackUrl: spec.callbackUrl,
    maxDurationMs: spec.maxDurationMs,
    tokenCap: spec.tokenCap,
    stageBuild: spec.build,
    setupTokens: spec.setupTokens,
    skipPermissions: spec.skipPermissions,
    agent: spec.agent,
    agentModel: spec.agentModel,
    agentCommand: spec.agentCommand,
    agentPrice: spec.agentPrice,
    resume: spec.resume,
  });
}

/** The run's secrets, as `baton agent` reads them from `BATON_SECRETS_FILE` or `BATON_SECRETS_FD`. */
export function runnerSecrets(spec: WorkspaceSpec): RunnerSecrets {
  return {
    CALLBACK_TOKEN: spec.callbackToken,
    ...(spec.forgeToken ? { GITEA_TOKEN: spec.forgeToken } : {}),
    // Only this run's agent's key: a Codex run never holds the Gemini key, and so on.
    ...(spec.agentSecret && (RUNNER_SECRETS as readonly string[]).includes(spec.agentSecret.name)
      ? { [spec.agentSecret.name]: spec.agentSecret.value }
      : {}),
  };
}

interface Health {
  ok: boolean;
  reason?: string;
  /** What made the check fail, kept as the cause of the runs' errors: a full disk is transient. */
  cause?: unknown;
  at: number;
}

/**
 * Workspaces as processes on this machine: `<dataDir>/workspaces/<name>/` holds `runner.json`
 * (pids and process start time, no secrets), `runner.log`, and the two directories the run sees:
 * `work/` (its workspace) and `home/`. Each runner and its agent live in a bubblewrap sandbox of
 * their own (see sandbox.ts) unless the operator turned it off. Runners outlive a baton restart;
 * the next baton finds them again through `runner.json`.
 */
export function createLocalProvider(options: LocalProviderOptions): WorkspaceProvider {
  if (options.command.length === 0) throw new Error('createLocalProvider: command must not be empty');
  const root = path.resolve(options.dataDir, 'workspaces');
  const now = options.now ?? Date.now;
  const spawn = options.spawn ?? nodeSpawn;
  const graceMs = options.stopGraceMs ?? 15_000;
  const onError = options.onError ?? (() => {});
  const sandbox = options.sandbox ?? { kind: 'bwrap' };
  // Root's files and root's processes must never be the sandbox's own: as root, runs are another
  // user. It is also what lets the nested sandbox of each step mount its /proc: mapped to root,
  // bwrap covers /proc/irq and /proc/bus with read-only mounts (bubblewrap.c, cover_proc_dirs),
  // which become locked in a nested user namespace, and the kernel then refuses a new proc mount.
  const runAs = sandbox.kind === 'bwrap' && process.getuid?.() === 0 ? (sandbox.rootUser ?? { uid: 65534, gid: 65534 }) : undefined;
  /** Login files every run gets a copy of in its home (see handCredentials). */
  const runCredentials: RunCredential[] = [];
  if (sandbox.kind === 'bwrap' && sandbox.gitConfig)
    runCredentials.push({ setting: 'local.gitConfig', source: sandbox.gitConfig, target: '.gitconfig' });
  if (sandbox.kind === 'bwrap' && sandbox.claudeCredentials)
    runCredentials.push({ setting: 'local.claudeCredentials', source: sandbox.claudeCredentials, target: '.claude/.credentials.json' });
  const gates = sandbox.kind === 'bwrap' && options.egress !== false ? createRunGates({ egress: options.egress ?? {}, onError }) : null;
  const runUids = runAs && sandbox.kind === 'bwrap' ? sandbox.runUids : undefined;
  /** Uids being given to runs right now (before their directories say so). */
  const reservedUids = new Set<number>();
  const creating = new Map<string, Promise<Workspace>>();
  const deleting = new Map<string, Promise<void>>();
  const timers = new Set<NodeJS.Timeout>();
  let health: Health | null = null;
  let checking: Promise<Health> | null = null;

  const dirOf = (name: string) => path.join(root, name);
  const checkName = (name: string) => {
    if (!NAME_PATTERN.test(name)) {
      throw new PermanentError(
        `workspace name ${JSON.stringify(name)} is not valid for the local provider: use 1-128 letters, digits, ".", "_" or "-", starting with a letter or digit`,
      );
    }
  };
  const validName = (name: string) => NAME_PATTERN.test(name);

  const read = (name: string): Workspace | null => {
    const dir = dirOf(name);
    let stat: fs.Stats;
    try {
      stat = fs.statSync(dir);
    } catch {
      return null;
    }
    if (!stat.isDirectory()) return null;
    const record = readRunnerRecord(path.join(dir, RECORD));
    const createdAt = record?.startedAt ?? Math.floor(stat.birthtimeMs || stat.mtimeMs);
    let status: WorkspaceStatus;
    if (fs.existsSync(path.join(dir, DELETE_MARKER))) status = 'deleting';
    else if (!record) status = creating.has(name) ? 'pending' : 'failed';
    else if (record.pid === null) status = creating.has(name) ? 'starting' : 'failed';
    else if (isRunnerAlive(record)) status = fs.existsSync(path.join(dir, STOP_MARKER)) ? 'stopping' : 'running';
    else status = 'stopped';
    return { id: name, name, status, createdAt };
  };

  const later = (ms: number, fn: () => void) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      fn();
    }, ms);
    timer.unref();
    timers.add(timer);
  };

  /**
   * Ends what is left of a run that no recorded pid leads to. Without a sandbox, the agent and
   * what it started live in groups of their own and outlive a runner that dies: they are found by
   * the run's BATON_WORKDIR in their environment (in a sandbox, the init's death ends them). And a
   * start whose baton was killed before it recorded the pid left a runner nobody knows: it carries
   * its start's claim in its environment.
   */
  const killLeftovers = (dir: string, record: RunnerRecord | null) => {
    const markers = [
      ...(sandbox.kind === 'none' ? [`${WORKDIR_VARIABLE}=${path.join(dir, WORK)}`] : []),
      ...(record?.claim ? [`${CLAIM_VARIABLE}=${record.claim}`] : []),
    ];
    for (const marker of markers) {
      for (const pid of processesWithEnv(marker)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // Gone meanwhile.
        }
      }
    }
  };

  /** Ends every process of the run at once. */
  const kill = (dir: string, record: RunnerRecord) => {
    signalRunner(record, 'SIGKILL');
    killLeftovers(dir, record);
  };

  /**
   * SIGTERM to a live runner (it stops its agent and still reports), and SIGKILL after the grace
   * period if anything of the run is left. Without a runner nobody is left to report: what
   * remains of the run is killed now.
   */
  const terminate = (dir: string, record: RunnerRecord) => {
    if (record.pid === null || !isRunAlive(record)) return false;
    fs.writeFileSync(path.join(dir, STOP_MARKER), `${new Date(now()).toISOString()}\n`);
    if (!isRunnerAlive(record)) {
      kill(dir, record);
      return true;
    }
    signalRunner(record, 'SIGTERM');
    later(graceMs, () => {
      if (isRunAlive(record)) kill(dir, record);
    });
    return true;
  };

  const waitForExit = async (record: RunnerRecord, ms: number) => {
    const deadline = Date.now() + ms;
    while (isRunAlive(record) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    return !isRunAlive(record);
  };

  /** `dir` under `parent`, and in it the directories a run sees, owned by the user it runs as (`user`, else `runAs`). */
  const prepareDirs = (parent: string, dir: string, user = runAs) => {
    // Traversable (not listable) for the sandbox user, when it is not baton's own.
    const mode = runAs ? 0o711 : 0o700;
    // The data directory is made 0700 (only baton's user); the runs' other user must still pass
    // through it to reach its workspace, so it gets the same traverse-only bit, nothing more.
    for (const d of [parent, dir]) {
      fs.mkdirSync(d, { recursive: true, mode });
      fs.chmodSync(d, mode);
    }
    // After the mkdir: on a first start (or under `baton doctor`) the data directory is new.
    if (runAs) allowTraversal(options.dataDir);
    const workDir = path.join(dir, WORK);
    const homeDir = path.join(dir, HOME);
    const egressDir = gates ? path.join(dir, EGRESS_DIR) : undefined;
    for (const d of [workDir, homeDir, ...(egressDir ? [egressDir] : [])]) {
      fs.mkdirSync(d, { recursive: true, mode: 0o700 });
      fs.chmodSync(d, 0o700);
      if (user) fs.chownSync(d, user.uid, user.gid);
    }
    // The run's own uid (from local.runUids, or local.rootUser) owns its copies.
    if (sandbox.kind === 'bwrap') handCredentials(homeDir, runCredentials, user);
    return { workDir, homeDir, egressDir, user };
  };

  /** baton's environment (only the allowed variables), the settings, then what the sandbox dictates. */
  const baseEnv = (workDir: string): Record<string, string> => {
    const inherited = Object.fromEntries(
      (options.inheritEnv ?? DEFAULT_INHERIT).flatMap((key) => (process.env[key] !== undefined ? [[key, process.env[key]!]] : [])),
    );
    const env: Record<string, string> = { ...inherited, ...withoutSecrets(options.env ?? {}) };
    if (sandbox.kind === 'bwrap') {
      return { ...env, HOME: SANDBOX_HOME, TMPDIR: '/tmp', BATON_WORKDIR: SANDBOX_WORKDIR, BATON_SANDBOX: 'bwrap' };
    }
    return { ...env, BATON_WORKDIR: workDir };
  };

  const bwrapPath = () => (sandbox.kind === 'bwrap' ? findCommand(sandbox.bwrap ?? 'bwrap', process.env.PATH) : null);

  /** `nice -n N [ionice -c 2 -n 7]`: each execs the next, so the runner keeps the pid spawned. */
  const priority = (): string[] => {
    const nice = options.runnerNice ?? 10;
    if (nice <= 0) return [];
    const niceBin = findCommand('nice', process.env.PATH);
    const ioniceBin = findCommand('ionice', process.env.PATH);
    return [...(niceBin ? [niceBin, '-n', String(nice)] : []), ...(ioniceBin ? [ioniceBin, '-c', '2', '-n', '7'] : [])];
  };

  /**
   * Starts `command` as a run would be started: in its sandbox (or not), detached, as its user.
   * `readOnly` adds host paths this run (only) may read: a declared local repository.
   */
  const startRun = (
    command: readonly string[],
    dirs: { workDir: string; homeDir: string; egressDir?: string; user?: { uid: number; gid: number } },
    env: Record<string, string>,
    stdio: StdioOptions,
    readOnly: readonly string[] = [],
  ) => {
    if (sandbox.kind === 'none') {
      // A runner that cannot be started must fail its spawn, as without the prefix, not exit 127 under nice.
      const startable = findCommand(command[0]!, env.PATH ?? process.env.PATH, dirs.workDir) !== null;
      const [file, ...args] = [...(startable ? priority() : []), ...command] as [string, ...string[]];
      return spawn(file, args, { cwd: dirs.workDir, env, detached: true, stdio });
    }
    const bwrap = bwrapPath();
    if (bwrap === null) throw new Error(missingBwrap(sandbox.bwrap ?? 'bwrap'));
    const args = sandboxArguments({
      workDir: dirs.workDir,
      homeDir: dirs.homeDir,
      readOnly: [...(sandbox.readOnlyPaths ?? []), ...readOnly],
      hidden: [options.dataDir, ...(sandbox.hiddenPaths ?? [])],
      egressDir: dirs.egressDir,
      insideUser: runUids ? { uid: 65534, gid: 65534 } : undefined,
    });
    const [file, ...prefix] = [...priority(), bwrap] as unknown as [string, ...string[]];
    return spawn(file, [...prefix, ...args, '--info-fd', String(INFO_FD), '--', ...command], {
      cwd: dirs.workDir,
      env,
      detached: true,
      stdio,
      ...(dirs.user ? { uid: dirs.user.uid, gid: dirs.user.gid } : {}),
    });
  };

  /** Runs the readiness check in a throw-away workspace, exactly as a runner would run. */
  const runCheck = async (): Promise<Health> => {
    const dir = path.join(path.resolve(options.dataDir), 'sandbox-checks', randomUUID());
    const at = now();
    try {
      if (sandbox.kind === 'bwrap' && bwrapPath() === null)
        return { ok: false, reason: `local provider: ${missingBwrap(sandbox.bwrap ?? 'bwrap')}`, at };
      // As a run would be: with a uid of the range when runs get one each.
      const user = runUids ? pickRunUser(root, runUids, 0, reservedUids) : runAs;
      const dirs = writing('of the sandbox check', () => prepareDirs(path.dirname(dir), dir, user));
      // The check proves the network too: from inside, baton's port and its database must not connect.
      const network = gates ? { ...(await gates.open(dir, undefined, dirs.user)), BATON_CHECK_UNREACHABLE: gates.unreachable } : {};
      let output = '';
      const child = startRun(options.check ?? ['true'], dirs, { ...baseEnv(dirs.workDir), ...network }, [
        'ignore',
        'pipe',
        'pipe',
        'ignore',
        'pipe',
      ]);
      for (const stream of [child.stdout, child.stderr]) {
        stream?.setEncoding('utf8');
        stream?.on('data', (chunk: string) => (output += chunk));
      }
      // bwrap's --info-fd answer is not needed here, but must be drained for 'close' to come.
      child.stdio[INFO_FD]?.on('data', () => {});
      const exit = await new Promise<{ code: number | null; error?: Error }>((resolve) => {
        const timer = setTimeout(() => {
          try {
            if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
          } catch {
            // Gone meanwhile.
          }
          resolve({ code: null, error: new Error(`the check did not finish within ${CHECK_TIMEOUT_MS / 1000} s`) });
        }, CHECK_TIMEOUT_MS);
        child.once('error', (error) => {
          clearTimeout(timer);
          resolve({ code: null, error });
        });
        child.once('close', (code) => {
          clearTimeout(timer);
          resolve({ code });
        });
      });
      if (exit.code === 0) return { ok: true, at };
      const last =
        output
          .split('\n')
          .filter((l) => l.trim() !== '')
          .at(-1)
          ?.trim() ??
        exit.error?.message ??
        `exit code ${exit.code}`;
      return { ok: false, reason: `local provider: ${describeCheckFailure(last, sandbox.kind, runAs)}`, at };
    } catch (err) {
      return { ok: false, reason: `local provider: ${describeCheckFailure((err as Error).message, sandbox.kind, runAs)}`, cause: err, at };
    } finally {
      await gates?.close(dir);
      await fs.promises.rm(dir, { recursive: true, force: true }).catch(() => {});
    }
  };

  const refreshHealth = (): Promise<Health> => {
    checking ??= runCheck()
      .then((result) => {
        health = result;
        return result;
      })
      .finally(() => {
        checking = null;
      });
    return checking;
  };

  const start = async (spec: WorkspaceSpec): Promise<Workspace> => {
    // A run is never started where the check says it cannot work: the reason is the run's error.
    const ready = health?.ok ? health : await refreshHealth();
    if (!ready.ok) throw new Error(ready.reason ?? 'local provider: not ready', { cause: ready.cause });

    const dir = dirOf(spec.name);
    if (fs.existsSync(path.join(dir, DELETE_MARKER))) {
      // The old workspace of this name is going away; the new one must not inherit its files.
      await (deleting.get(spec.name) ?? removeWorkspace(spec.name));
    }
    const user = runUids ? pickRunUser(root, runUids, spec.runId, reservedUids) : runAs;
    if (runUids && user) reservedUids.add(user.uid);
    let dirs: ReturnType<typeof prepareDirs>;
    try {
      dirs = writing(spec.name, () => prepareDirs(root, dir, user));
    } finally {
      if (runUids && user) reservedUids.delete(user.uid);
    }
    if (spec.repositoryPath && sandbox.kind === 'bwrap') trustRepository(dirs.homeDir, spec.repositoryPath, user);
    const recordFile = path.join(dir, RECORD);
    const claim: RunnerRecord = {
      pid: null,
      pgid: null,
      startedAt: now(),
      startTicks: null,
      runner: null,
      runId: spec.runId,
      stage: spec.stage,
      claim: randomUUID(),
    };
    try {
      // 'wx' makes the claim atomic: a second baton creating the same name adopts this one.
      writing(spec.name, () => fs.writeFileSync(recordFile, JSON.stringify(claim), { flag: 'wx', mode: 0o600 }));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') {
        const existing = read(spec.name);
        if (existing) return existing;
      }
      throw err;
    }

    const extra = Object.fromEntries(Object.entries(spec.extra ?? {}).filter(([key]) => /^[A-Z_][A-Z0-9_]*$/.test(key)));
    let network: Record<string, string> = {};
    try {
      if (gates) network = await gates.open(dir, spec, user);
    } catch (err) {
      fs.rmSync(dir, { recursive: true, force: true });
      throw new Error(`the egress gate of the run could not be opened: ${(err as Error).message}`, { cause: err });
    }
    const env = {
      ...baseEnv(dirs.workDir),
      ...withoutSecrets(extra),
      ...runnerEnv(spec),
      // After the run's own: the gate's proxy and the callback through it replace what baton's env or the spec said.
      ...network,
      BATON_AGENT_LOG_PORT: String(options.logPort ?? 0),
      BATON_SECRETS_FD: String(SECRETS_FD),
      [CLAIM_VARIABLE]: claim.claim!,
    };
    const secrets = writing(spec.name, () =>
      openSecrets(path.join(dir, SECRETS), {
        ...secretsIn(options.env ?? {}),
        ...options.secrets,
        ...secretsIn(extra),
        ...runnerSecrets(spec),
      }),
    );
    const log = writing(spec.name, () => fs.openSync(path.join(dir, LOG), 'a', 0o600));
    let child: ChildProcess;
    try {
      child = startRun(
        options.command,
        dirs,
        env,
        ['ignore', log, log, secrets, sandbox.kind === 'bwrap' ? 'pipe' : 'ignore'],
        spec.repositoryPath ? [spec.repositoryPath] : [],
      );
    } catch (err) {
      void gates?.close(dir);
      fs.rmSync(dir, { recursive: true, force: true });
      throw new Error(`the local runner could not be started: ${(err as Error).message}`, { cause: err });
    } finally {
      // The runner holds its own copies now; baton keeps none of the secrets.
      fs.closeSync(log);
      fs.closeSync(secrets);
    }
    const spawnError = await new Promise<Error | null>((resolve) => {
      if (child.pid !== undefined) return resolve(null);
      child.once('error', resolve);
    });
    if (spawnError || child.pid === undefined) {
      void gates?.close(dir);
      fs.rmSync(dir, { recursive: true, force: true });
      const message = `the local runner could not be started: ${spawnError?.message ?? 'no pid'}`;
      // Out of processes or descriptors for a while (EAGAIN, EMFILE): the run waits and retries.
      if (transientErrorCode(spawnError)) throw new Error(message, { cause: spawnError });
      throw new PermanentError(
        `the local runner command ${JSON.stringify(sandbox.kind === 'bwrap' ? (bwrapPath() ?? 'bwrap') : options.command[0])} could not be started: ${spawnError?.message ?? 'no pid'}`,
        { cause: spawnError },
      );
    }
    // In a sandbox the child is bwrap's monitor: it exits with the runner's status, or at once
    // when SIGTERM reaches it while the runner is still reporting (the record's pid, the
    // namespace's init, says when the run is really over).
    const monitor = child.pid;
    child.once('exit', (code, signal) => {
      // A teardown may already be removing the directory: a file written now makes its rm fail.
      if (deleting.has(spec.name)) return;
      try {
        fs.writeFileSync(path.join(dir, EXIT), JSON.stringify({ code, signal, at: now() }));
      } catch {
        // The directory may already be deleted.
      }
    });
    // The runner must be able to outlive this process (a baton restart does not kill runs).
    child.unref();
    let pid = monitor;
    if (sandbox.kind === 'bwrap') {
      const init = await readSandboxInit(child);
      if (init === null) {
        const tail = lastLines(path.join(dir, LOG));
        void gates?.close(dir);
        fs.rmSync(dir, { recursive: true, force: true });
        throw new Error(`the local sandbox could not be set up: ${tail || 'bwrap exited before starting the runner'}`);
      }
      pid = init;
    }
    const record: RunnerRecord = {
      ...claim,
      pid,
      pgid: monitor,
      startTicks: readProcStat(pid)?.startTicks ?? null,
      runner: sandbox.kind === 'bwrap' ? await findSandboxRunner(pid) : null,
    };
    fs.writeFileSync(recordFile, JSON.stringify(record), { mode: 0o600 });
    return { id: spec.name, name: spec.name, status: 'running', createdAt: claim.startedAt };
  };

  const removeWorkspace = async (name: string): Promise<void> => {
    const dir = dirOf(name);
    const record = readRunnerRecord(path.join(dir, RECORD));
    if (record && record.pid !== null && isRunAlive(record)) {
      terminate(dir, record);
      if (!(await waitForExit(record, graceMs + 5_000))) {
        throw new Error(`runner ${record.pid} of workspace ${name} did not exit after SIGKILL`);
      }
    }
    killLeftovers(dir, record);
    await gates?.close(dir);
    // Retries ride out a file appearing while the tree is removed (ENOTEMPTY), e.g. a runner's
    // last write racing its own termination.
    await fs.promises.rm(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 });
  };

  // Runners outlive a baton restart; their gates, in this process, do not: open them again.
  const reopening =
    gates?.reopen(root, (dir) => {
      const record = readRunnerRecord(path.join(dir, RECORD));
      return record !== null && record.pid !== null && isRunnerAlive(record) && !fs.existsSync(path.join(dir, DELETE_MARKER));
    }) ?? Promise.resolve();

  return {
    name: 'local',
    async create(spec) {
      checkName(spec.name);
      const inFlight = creating.get(spec.name);
      if (inFlight) return inFlight;
      const existing = read(spec.name);
      if (existing && existing.status !== 'deleting' && existing.status !== 'failed') return existing;
      if (existing?.status === 'failed') {
        // A start that never recorded its runner (its baton died meanwhile) may have left one running.
        killLeftovers(dirOf(spec.name), readRunnerRecord(path.join(dirOf(spec.name), RECORD)));
        await fs.promises.rm(dirOf(spec.name), { recursive: true, force: true });
      }
      const promise = start(spec).finally(() => creating.delete(spec.name));
      creating.set(spec.name, promise);
      return promise;
    },
    async get(name) {
      return validName(name) ? read(name) : null;
    },
    async list() {
      let entries: fs.Dirent[];
      try {
        entries = fs.readdirSync(root, { withFileTypes: true });
      } catch {
        return [];
      }
      return entries.filter((e) => e.isDirectory() && validName(e.name)).flatMap((e) => read(e.name) ?? []);
    },
    async stop(name) {
      if (!validName(name)) return;
      const dir = dirOf(name);
      const record = readRunnerRecord(path.join(dir, RECORD));
      if (record) terminate(dir, record);
    },
    async delete(name) {
      if (!validName(name) || deleting.has(name) || !fs.existsSync(dirOf(name))) return;
      fs.writeFileSync(path.join(dirOf(name), DELETE_MARKER), `${new Date(now()).toISOString()}\n`);
      const promise = removeWorkspace(name)
        .catch((err) => onError(`deleting local workspace ${name} failed; it stays marked for deletion`, err))
        .finally(() => deleting.delete(name));
      deleting.set(name, promise);
    },
    health() {
      // Checked in the background: /ready answers at once with the last result, and a failure
      // is checked again soon, so fixing it turns /ready green without a restart.
      if (health === null || now() - health.at > (health.ok ? CHECK_REFRESH_MS : CHECK_RETRY_MS)) void refreshHealth();
      if (health === null) return { ok: false, reason: 'local provider: checking the sandbox and the agent command' };
      return health.ok ? { ok: true } : { ok: false, reason: health.reason };
    },
    async close() {
      await Promise.all([...deleting.values(), checking]);
      // Live runs lose their way out until the next baton opens their gates again (reopenGates).
      await reopening;
      await gates?.closeAll();
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
    },
  };
}

/**
 * Lets git in the run use a declared local repository the run's user does not own (as root, runs
 * are another user): git refuses such a repository ("dubious ownership") unless the user's global
 * config lists it in `safe.directory`, which git 2.39 reads only from there, not from `-c` or the
 * environment (tried against git 2.39.5). The run's own ~/.config/git/config is used, so a
 * `local.gitConfig` bound at ~/.gitconfig stays as the operator wrote it.
 */
function trustRepository(homeDir: string, repository: string, runAs: { uid: number; gid: number } | undefined): void {
  const dir = path.join(homeDir, '.config', 'git');
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  // A working tree is checked at its .git, a bare repository at itself.
  // Quoted as git config values are, so any path reads back as written.
  const quote = (p: string) => `"${p.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
  const entries = [path.join(repository, '.git'), repository].map((p) => `\tdirectory = ${quote(p)}\n`).join('');
  const file = path.join(dir, 'config');
  fs.writeFileSync(file, `[safe]\n${entries}`, { mode: 0o600 });
  if (runAs) for (const p of [path.join(homeDir, '.config'), dir, file]) fs.chownSync(p, runAs.uid, runAs.gid);
}

/** Errors of a filesystem that takes no more writes: the run fails saying so, not with a bare errno. */
const UNWRITABLE: Record<string, string> = {
  ENOSPC: 'no space left on the device',
  EDQUOT: 'the disk quota is exhausted',
  EROFS: 'the filesystem is read-only',
};

/**
 * Runs a step that writes the workspace. When the filesystem refuses (full, over quota, read-only)
 * the error says that the workspace cannot be written and why, and keeps the errno as its cause:
 * the run waits with backoff, past its attempts, until the disk has room again (transientErrorCode).
 */
function writing<T>(name: string, step: () => T): T {
  try {
    return step();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? '';
    const reason = UNWRITABLE[code];
    if (reason) throw new Error(`workspace ${name} cannot be written: ${reason} (${code})`, { cause: err });
    throw err;
  }
}

/** Adds search permission for others to `dir` (only that bit), if it lacks it. */
function allowTraversal(dir: string): void {
  const mode = fs.statSync(dir).mode & 0o7777;
  if ((mode & 0o001) === 0) fs.chmodSync(dir, mode | 0o001);
}

function withoutSecrets(env: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter(([key]) => !(RUNNER_SECRETS as readonly string[]).includes(key)));
}

function secretsIn(env: Record<string, string>): RunnerSecrets {
  return Object.fromEntries(Object.entries(env).filter(([key]) => (RUNNER_SECRETS as readonly string[]).includes(key)));
}

/**
 * The secrets as a descriptor the runner inherits: written to a 0600 file, opened, and unlinked
 * before anything runs, so no file is left for anyone to find; the runner reads and closes it.
 */
function openSecrets(file: string, secrets: RunnerSecrets): number {
  fs.rmSync(file, { force: true });
  fs.writeFileSync(file, formatRunnerSecrets(secrets), { mode: 0o600, flag: 'wx' });
  try {
    return fs.openSync(file, 'r');
  } finally {
    fs.rmSync(file, { force: true });
  }
}

/**
 * The runner of a sandbox whose init is `init`, once the init has forked it; `{ pid: 0 }` when the
 * init is gone first (the runner has come and gone), or it does not appear within 10 s.
 */
async function findSandboxRunner(init: number): Promise<{ pid: number; startTicks: number | null }> {
  const initTicks = readProcStat(init)?.startTicks ?? null;
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline && isProcessAlive(init, initTicks)) {
    const runner = sandboxRunner(init);
    if (runner) return runner;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  return { pid: 0, startTicks: null };
}

/** The host pid of the sandbox's init, from `--info-fd`; null when bwrap failed before it. */
async function readSandboxInit(child: ChildProcess): Promise<number | null> {
  const info = child.stdio[INFO_FD];
  if (!info) return null;
  let text = '';
  (info as NodeJS.ReadableStream).setEncoding('utf8');
  for await (const chunk of info as AsyncIterable<string>) text += chunk;
  try {
    const pid = (JSON.parse(text) as { 'child-pid'?: unknown })['child-pid'];
    return typeof pid === 'number' && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

function lastLines(file: string): string {
  try {
    return fs
      .readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== '')
      .slice(-3)
      .join('; ');
  } catch {
    return '';
  }
}

function missingBwrap(command: string): string {
  return (
    `bubblewrap ("${command}") is not installed or not on baton's PATH (${process.env.PATH ?? 'unset'}), so runs cannot be sandboxed: ` +
    'install the bubblewrap package, or set local.sandbox: none in baton.yaml to run them without isolation (not recommended)'
  );
}

function describeCheckFailure(line: string, kind: 'bwrap' | 'none', runAs: { uid: number } | undefined): string {
  if (kind === 'bwrap' && line.startsWith('bwrap:')) {
    const hint =
      runAs && /Permission denied/.test(line)
        ? ` (runs are uid ${runAs.uid} because baton runs as root: every directory above the workspaces, BATON_DATA_DIR included, must be traversable by it, e.g. chmod o+x; see docs/troubleshooting.md#sandbox-setup)`
        : '';
    return `the bubblewrap sandbox cannot be set up: ${line}${hint}; fix it, or set local.sandbox: none in baton.yaml to run without isolation (not recommended)`;
  }
  return line;
}
