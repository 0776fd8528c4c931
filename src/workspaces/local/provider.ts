import { spawn as nodeSpawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { PermanentWorkspaceError, type Workspace, type WorkspaceProvider, type WorkspaceSpec, type WorkspaceStatus } from '../types.js';
import { isRunnerAlive, readProcStat, readRunnerRecord, signalRunnerGroup, type RunnerRecord } from './runner-process.js';

export interface LocalProviderOptions {
  /** Workspaces are directories under `<dataDir>/workspaces/`. */
  dataDir: string;
  /**
   * The runner command; the workspace's env carries the run.
   * @example [process.execPath, '/opt/baton/bin/baton.js', 'agent']
   */
  command: readonly string[];
  /**
   * Extra env for every runner (e.g. `CLAUDE_CODE_OAUTH_TOKEN`, `BATON_INSTALL_COMMAND`).
   * The run's own variables take precedence.
   */
  env?: Record<string, string>;
  /**
   * Variables of baton's own environment passed through. The server's env holds its secrets
   * (bot tokens, database URL), so only these go to the agent.
   * @default ['PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'LANG', 'LC_ALL', 'TZ', 'TMPDIR', 'NODE_EXTRA_CA_CERTS', 'SSL_CERT_FILE', 'HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY', 'http_proxy', 'https_proxy', 'no_proxy']
   */
  inheritEnv?: readonly string[];
  /** Port of each runner's live log page (`BATON_AGENT_LOG_PORT`); 0 = off, as several runners share the host. @default 0 */
  logPort?: number;
  /** Time between SIGTERM and SIGKILL of a runner's process group on stop/delete. @default 15_000 */
  stopGraceMs?: number;
  now?: () => number;
  spawn?: (command: string, args: readonly string[], options: SpawnOptions) => ChildProcess;
  /** Problems in background work (deleting a directory failed, …). */
  onError?: (message: string, error: unknown) => void;
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
const DELETE_MARKER = 'deleting';

/**
 * The run's variables, as `baton agent` reads them (see src/cli/agent.ts). Shared by every
 * provider that passes the run through environment variables.
 */
export function runnerEnv(spec: WorkspaceSpec): Record<string, string> {
  const env: Record<string, string | undefined> = {
    TASK_TYPE: spec.stage,
    ISSUE_NUMBER: spec.number?.toString(),
    GITEA_URL: spec.forgeUrl,
    GITEA_ORG: spec.owner,
    GITEA_REPO: spec.repo,
    GITEA_TOKEN: spec.forgeToken,
    REPO_CLONE_URL: spec.cloneUrl,
    DEPLOY_ENV: spec.deployEnv,
    CALLBACK_URL: spec.callbackUrl,
    CALLBACK_TOKEN: spec.callbackToken,
    BATON_RUN_ID: String(spec.runId),
    BATON_MAX_DURATION_MS: spec.maxDurationMs?.toString(),
    BATON_STAGE_BUILD: spec.build,
    BATON_STAGE_SKIP_PERMISSIONS: spec.skipPermissions?.toString(),
  };
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined && e[1] !== ''));
}

/**
 * Workspaces as child processes on this machine: `<dataDir>/workspaces/<name>/` holds the
 * runner's working directory, `runner.json` (pid and process start time, no secrets) and
 * `runner.log`. Runners are their own process groups and outlive a baton restart; the next
 * baton finds them again through `runner.json`.
 */
export function createLocalProvider(options: LocalProviderOptions): WorkspaceProvider {
  if (options.command.length === 0) throw new Error('createLocalProvider: command must not be empty');
  const root = path.resolve(options.dataDir, 'workspaces');
  const now = options.now ?? Date.now;
  const spawn = options.spawn ?? nodeSpawn;
  const graceMs = options.stopGraceMs ?? 15_000;
  const onError = options.onError ?? (() => {});
  const creating = new Map<string, Promise<Workspace>>();
  const deleting = new Map<string, Promise<void>>();
  const timers = new Set<NodeJS.Timeout>();

  const dirOf = (name: string) => path.join(root, name);
  const checkName = (name: string) => {
    if (!NAME_PATTERN.test(name)) {
      throw new PermanentWorkspaceError(
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

  /** SIGTERM now, SIGKILL after the grace period if the runner is still the same live process. */
  const terminate = (dir: string, record: RunnerRecord) => {
    if (record.pid === null || !isRunnerAlive(record)) return false;
    fs.writeFileSync(path.join(dir, STOP_MARKER), `${new Date(now()).toISOString()}\n`);
    signalRunnerGroup(record.pid, 'SIGTERM');
    later(graceMs, () => {
      if (record.pid !== null && isRunnerAlive(record)) signalRunnerGroup(record.pid, 'SIGKILL');
    });
    return true;
  };

  const waitForExit = async (record: RunnerRecord, ms: number) => {
    const deadline = Date.now() + ms;
    while (isRunnerAlive(record) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    return !isRunnerAlive(record);
  };

  const start = async (spec: WorkspaceSpec): Promise<Workspace> => {
    const dir = dirOf(spec.name);
    if (fs.existsSync(path.join(dir, DELETE_MARKER))) {
      // The old workspace of this name is going away; the new one must not inherit its files.
      await (deleting.get(spec.name) ?? removeWorkspace(spec.name));
    }
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const recordFile = path.join(dir, RECORD);
    const claim: RunnerRecord = { pid: null, startedAt: now(), startTicks: null, runId: spec.runId, stage: spec.stage };
    try {
      // 'wx' makes the claim atomic: a second baton creating the same name adopts this one.
      fs.writeFileSync(recordFile, JSON.stringify(claim), { flag: 'wx', mode: 0o600 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') {
        const existing = read(spec.name);
        if (existing) return existing;
      }
      throw err;
    }

    const inherited = Object.fromEntries(
      (options.inheritEnv ?? DEFAULT_INHERIT).flatMap((key) => (process.env[key] !== undefined ? [[key, process.env[key]!]] : [])),
    );
    const extra = Object.fromEntries(Object.entries(spec.extra ?? {}).filter(([key]) => /^[A-Z_][A-Z0-9_]*$/.test(key)));
    const env = {
      ...inherited,
      ...options.env,
      ...extra,
      ...runnerEnv(spec),
      BATON_WORKDIR: dir,
      BATON_AGENT_LOG_PORT: String(options.logPort ?? 0),
    };
    const log = fs.openSync(path.join(dir, LOG), 'a', 0o600);
    let child: ChildProcess;
    try {
      const [command, ...args] = options.command as [string, ...string[]];
      child = spawn(command, args, { cwd: dir, env, detached: true, stdio: ['ignore', log, log] });
    } finally {
      fs.closeSync(log);
    }
    const spawnError = await new Promise<Error | null>((resolve) => {
      if (child.pid !== undefined) return resolve(null);
      child.once('error', resolve);
    });
    if (spawnError || child.pid === undefined) {
      fs.rmSync(dir, { recursive: true, force: true });
      throw new PermanentWorkspaceError(
        `the local runner command ${JSON.stringify(options.command[0])} could not be started: ${spawnError?.message ?? 'no pid'}`,
        {
          cause: spawnError,
        },
      );
    }
    const pid = child.pid;
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
    const record: RunnerRecord = { ...claim, pid, startTicks: readProcStat(pid)?.startTicks ?? null };
    fs.writeFileSync(recordFile, JSON.stringify(record), { mode: 0o600 });
    return { id: spec.name, name: spec.name, status: 'running', createdAt: claim.startedAt };
  };

  const removeWorkspace = async (name: string): Promise<void> => {
    const dir = dirOf(name);
    const record = readRunnerRecord(path.join(dir, RECORD));
    if (record && record.pid !== null && isRunnerAlive(record)) {
      terminate(dir, record);
      if (!(await waitForExit(record, graceMs + 5_000))) {
        throw new Error(`runner ${record.pid} of workspace ${name} did not exit after SIGKILL`);
      }
    }
    // Retries ride out a file appearing while the tree is removed (ENOTEMPTY), e.g. a runner's
    // last write racing its own termination.
    await fs.promises.rm(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 });
  };

  return {
    name: 'local',
    async create(spec) {
      checkName(spec.name);
      const inFlight = creating.get(spec.name);
      if (inFlight) return inFlight;
      const existing = read(spec.name);
      if (existing && existing.status !== 'deleting' && existing.status !== 'failed') return existing;
      if (existing?.status === 'failed') await fs.promises.rm(dirOf(spec.name), { recursive: true, force: true });
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
    async close() {
      await Promise.all([...deleting.values()]);
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
    },
  };
}
