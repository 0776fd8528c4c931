import fs from 'node:fs';
import path from 'node:path';
import { PermanentError } from '../../background/index.js';
import { handCredentials, type RunUser } from './credentials.js';
import { EGRESS_DIR } from './egress.js';
import type { LocalContext } from './options.js';

// A workspace's directory, `<dataDir>/workspaces/<name>/`: baton's records of the run beside the
// two directories the run sees (`work/`, `home/`) and its egress socket's (`egress/`).

const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
/** The runner's pids and start time, no secrets (runner-process.ts). */
export const RECORD = 'runner.json';
export const LOG = 'runner.log';
export const EXIT = 'exit.json';
export const STOP_MARKER = 'stop-requested';
export const DELETE_MARKER = 'deleting';
/** What the runner sees of a workspace; the records above stay outside, out of its reach. */
export const WORK = 'work';
const HOME = 'home';
export const SECRETS = '.secrets';

export const isValidName = (name: string): boolean => NAME_PATTERN.test(name);

export function checkName(name: string): void {
  if (!NAME_PATTERN.test(name)) {
    throw new PermanentError(
      `workspace name ${JSON.stringify(name)} is not valid for the local provider: use 1-128 letters, digits, ".", "_" or "-", starting with a letter or digit`,
    );
  }
}

/** The directories a run sees, and the user that owns them. */
export interface RunDirs {
  workDir: string;
  homeDir: string;
  egressDir: string | undefined;
  user: RunUser | undefined;
}

/** `dir` under `parent`, and in it the directories a run sees, owned by the user it runs as (`user`, else `runAs`). */
export function prepareDirs(ctx: LocalContext, parent: string, dir: string, user = ctx.runAs): RunDirs {
  // Traversable (not listable) for the sandbox user, when it is not baton's own.
  const mode = ctx.runAs ? 0o711 : 0o700;
  // The data directory is made 0700 (only baton's user); the runs' other user must still pass
  // through it to reach its workspace, so it gets the same traverse-only bit, nothing more.
  for (const d of [parent, dir]) {
    fs.mkdirSync(d, { recursive: true, mode });
    fs.chmodSync(d, mode);
  }
  // After the mkdir: on a first start (or under `baton doctor`) the data directory is new.
  if (ctx.runAs) allowTraversal(ctx.options.dataDir);
  const workDir = path.join(dir, WORK);
  const homeDir = path.join(dir, HOME);
  const egressDir = ctx.gates ? path.join(dir, EGRESS_DIR) : undefined;
  for (const d of [workDir, homeDir, ...(egressDir ? [egressDir] : [])]) {
    fs.mkdirSync(d, { recursive: true, mode: 0o700 });
    fs.chmodSync(d, 0o700);
    if (user) fs.chownSync(d, user.uid, user.gid);
  }
  // The run's own uid (from local.runUids, or local.rootUser) owns its copies.
  if (ctx.sandbox.kind === 'bwrap') handCredentials(homeDir, ctx.runCredentials, user);
  return { workDir, homeDir, egressDir, user };
}

/**
 * Lets git in the run use a declared local repository the run's user does not own (as root, runs
 * are another user): git refuses such a repository ("dubious ownership") unless the user's global
 * config lists it in `safe.directory`, which git 2.39 reads only from there, not from `-c` or the
 * environment (tried against git 2.39.5). The run's own ~/.config/git/config is used, so a
 * `local.gitConfig` bound at ~/.gitconfig stays as the operator wrote it.
 */
export function trustRepository(homeDir: string, repository: string, runAs: RunUser | undefined): void {
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
export function writing<T>(name: string, step: () => T): T {
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

/** The last three lines of `file` that are not blank, joined; '' when it cannot be read. */
export function lastLines(file: string): string {
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
