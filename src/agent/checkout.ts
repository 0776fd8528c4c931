import fs from 'node:fs';
import path from 'node:path';
import { CheckoutError, SetupCommandError } from './errors.js';
import type { ProcessExit } from './process-group.js';

export interface StepResult extends ProcessExit {
  /** Last lines of stdout+stderr, for error messages. */
  tail: string[];
}

/** Runs one command as a step of the run (stoppable by the runner's limits). */
export type StepRunner = (
  label: string,
  command: string,
  args: readonly string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv },
) => Promise<StepResult>;

export interface PrepareRepositoryOptions {
  exec: StepRunner;
  workdir: string;
  cloneUrl?: string;
  /** Directory name for the clone. @default derived from the clone URL */
  repoName?: string;
  /** @default 'develop' */
  branch?: string;
  /** Extra env for git (credentials). */
  gitEnv?: NodeJS.ProcessEnv;
  log: (line: string) => void;
}

/**
 * Makes sure a checkout of the repository exists and is on the working branch. When the
 * workdir already is a git checkout (a prebuilt workspace) it is used as is; otherwise the
 * repository is cloned into `<workdir>/<repo>`.
 *
 * Names that reach git come from outside (the repository name from the webhook, the remote's
 * default branch from whoever administers the repository): the clone directory name is checked
 * before any path is built from it, and a branch is checked (no leading `-`, then
 * `git check-ref-format --branch`) before it is used, and then only as an option's value or
 * behind `refs/remotes/origin/`, so it can never be read as an option.
 * @returns the repository directory
 */
export async function prepareRepository(options: PrepareRepositoryOptions): Promise<string> {
  const { exec, workdir, log } = options;
  const branch = options.branch ?? 'develop';
  const env = options.gitEnv;
  const existing = fs.existsSync(path.join(workdir, '.git'));
  const repoDir = existing ? workdir : cloneDirectory(workdir, options.repoName || repoNameFromUrl(options.cloneUrl ?? '') || 'repo');
  const shownUrl = options.cloneUrl ? displayUrl(options.cloneUrl) : '';
  await checkBranchName(exec, workdir, branch, 'the working branch (BATON_BRANCH)');

  if (!fs.existsSync(path.join(repoDir, '.git'))) {
    if (!options.cloneUrl) {
      throw new CheckoutError(`REPO_CLONE_URL is not set and ${repoDir} is not a git checkout; nothing to work on`);
    }
    log(`[baton] cloning ${shownUrl} into ${repoDir}`);
    // --no-checkout: nothing of the remote's default branch is checked out before it is vetted.
    const clone = await exec('git clone', 'git', ['clone', '--no-progress', '--no-checkout', '--', options.cloneUrl, repoDir], {
      cwd: workdir,
      env,
    });
    if (clone.code !== 0) throw new CheckoutError(`clone of ${shownUrl} failed: ${gitReason(clone)}`, { transient: passes(clone) });
  } else {
    log(`[baton] using the existing checkout in ${repoDir}`);
    const fetch = await exec('git fetch', 'git', ['fetch', '--prune', 'origin'], { cwd: repoDir, env });
    if (fetch.code !== 0) log(`[baton] git fetch failed (${gitReason(fetch)}); continuing with what is checked out`);
  }

  const hasBranch = await exec(
    'git rev-parse',
    'git',
    ['rev-parse', '--verify', '--quiet', '--end-of-options', `refs/remotes/origin/${branch}`],
    { cwd: repoDir, env },
  );
  let target = branch;
  if (hasBranch.code !== 0) {
    const head = await exec('git symbolic-ref', 'git', ['symbolic-ref', '--short', 'refs/remotes/origin/HEAD'], { cwd: repoDir, env });
    const remoteDefault =
      head.code === 0
        ? head.tail
            .at(-1)
            ?.trim()
            .replace(/^origin\//, '')
        : undefined;
    if (!remoteDefault) {
      log(`[baton] branch ${branch} does not exist on origin and origin has no default branch; staying on the current HEAD`);
      return repoDir;
    }
    await checkBranchName(exec, repoDir, remoteDefault, "the remote's default branch");
    log(`[baton] branch ${branch} does not exist on origin; using the default branch ${remoteDefault}`);
    target = remoteDefault;
  }
  // `-B <name>`: the name is an option's value; the start point begins with `refs/`; `--` ends
  // the revisions, so neither can be taken for an option or a path.
  const checkout = await exec('git checkout', 'git', ['checkout', '--quiet', '-B', target, `refs/remotes/origin/${target}`, '--'], {
    cwd: repoDir,
    env,
  });
  if (checkout.code !== 0) {
    throw new CheckoutError(`checkout of branch ${target} in ${shownUrl || repoDir} failed: ${gitReason(checkout)}`, {
      transient: passes(checkout),
    });
  }
  log(`[baton] on branch ${target}`);
  return repoDir;
}

/**
 * Repository names as forges allow them (letters, digits, `.`, `_`, `-`), never `.`, `..` or the
 * runner's own `.baton`: the name becomes a directory inside the workspace and must stay there.
 */
const REPO_DIRECTORY = /^[A-Za-z0-9._-]{1,100}$/;

/** `<workdir>/<name>`, after checking that the name is one directory inside the workspace. */
export function cloneDirectory(workdir: string, name: string): string {
  if (!REPO_DIRECTORY.test(name) || name === '.' || name === '..' || name === '.baton' || name === '.git' || name.startsWith('-')) {
    throw new CheckoutError(
      `repository name ${JSON.stringify(name)} cannot be a directory name in the workspace: use letters, digits, ".", "_" and "-" (not ".", ".." or a leading "-")`,
    );
  }
  const dir = path.join(workdir, name);
  if (path.dirname(dir) !== path.resolve(workdir)) throw new CheckoutError(`repository directory ${dir} is not inside ${workdir}`);
  return dir;
}

/** A branch name git accepts as such, never one that could be read as an option. */
async function checkBranchName(exec: StepRunner, cwd: string, name: string, what: string): Promise<void> {
  if (name.startsWith('-')) throw new CheckoutError(`${what} ${JSON.stringify(name)} starts with "-"; such a branch is refused`);
  const check = await exec('git check-ref-format', 'git', ['check-ref-format', '--branch', name], { cwd });
  // `--branch` expands `@{-1}` to the previous branch: only a name that stays itself is a name.
  if (check.code !== 0 || check.tail.at(-1)?.trim() !== name) {
    throw new CheckoutError(`${what} ${JSON.stringify(name)} is not a valid branch name`);
  }
}

/** Runs the configured install/build commands in order; the first failure ends the run. */
export async function runSetupCommands(
  exec: StepRunner,
  repoDir: string,
  commands: readonly { label: string; command: string }[],
  log: (line: string) => void,
  /** The tokens the stage grants its setup commands; none by default. */
  env: NodeJS.ProcessEnv = {},
): Promise<void> {
  for (const { label, command } of commands) {
    log(`[baton] ${label}: ${command}`);
    const result = await exec(label, 'sh', ['-c', command], { cwd: repoDir, env });
    if (result.code !== 0) {
      const how = result.error
        ? `could not start (${result.error.message})`
        : result.signal
          ? `was killed by ${result.signal}`
          : `failed with exit code ${result.code}`;
      const last = result.tail.filter((l) => l.trim() !== '').at(-1);
      throw new SetupCommandError(`${label} \`${command}\` ${how}${last ? `: ${last.trim()}` : ''}`, { transient: passes(result) });
    }
  }
}

/**
 * Env that lets git (the clone, and the agent's own pushes) authenticate to the forge without
 * writing the token into .git/config or a command line. Scoped to the forge's origin so the
 * token is never sent to another host the agent fetches from.
 */
export function gitAuthEnv(cloneUrl: string | undefined, token: string | undefined): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { GIT_TERMINAL_PROMPT: '0' };
  if (!cloneUrl || !token || !/^https?:\/\//i.test(cloneUrl)) return env;
  const origin = new URL(cloneUrl).origin;
  // Gitea's basic auth treats the user name as a token when the password is "x-oauth-basic".
  const basic = Buffer.from(`${token}:x-oauth-basic`).toString('base64');
  return {
    ...env,
    GIT_CONFIG_COUNT: '1',
    GIT_CONFIG_KEY_0: `http.${origin}/.extraHeader`,
    GIT_CONFIG_VALUE_0: `Authorization: Basic ${basic}`,
  };
}

/** The clone URL without any user:password part, safe for logs and summaries. */
export function displayUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.username || parsed.password) {
      parsed.username = '';
      parsed.password = '';
    }
    return parsed.toString();
  } catch {
    return url;
  }
}

function repoNameFromUrl(url: string): string {
  const last =
    url
      .replace(/[/\\]+$/, '')
      .split(/[/\\:]/)
      .at(-1) ?? '';
  return last.replace(/\.git$/, '');
}

function gitReason(result: StepResult): string {
  if (result.error) return `git could not be started (${result.error.message})`;
  if (result.signal) return `git was stopped by ${result.signal}`;
  const fatal = result.tail.filter((l) => /^(fatal|error):/.test(l.trim())).at(-1);
  const line = fatal ?? result.tail.filter((l) => l.trim() !== '').at(-1);
  return line ? line.trim().replace(/^(fatal|error):\s*/, '') : `git exited with code ${result.code}`;
}

/**
 * What git (curl underneath) and the system print when the cause passes: the forge answered 5xx
 * (a restart, an overloaded proxy), could not be reached or timed out, or the workspace's disk or
 * the system's descriptors and processes ran out. git has no machine-readable reasons, so its
 * words are matched; a 4xx (no such repository, no access), a bad ref or a command that fails on
 * its own stays permanent.
 */
const PASSING = [
  /The requested URL returned error: 5\d\d/i,
  /RPC failed; HTTP 5\d\d/i,
  /Could not resolve host/i,
  /Failed to connect to/i,
  /Connection (refused|reset|timed out)/i,
  /Operation timed out/i,
  /timed out after/i,
  /early EOF/i,
  /unexpected disconnect while reading sideband packet/i,
  /the remote end hung up unexpectedly/i,
  /No space left on device/i,
  /Too many open files/i,
  /Resource temporarily unavailable/i,
];
const PASSING_ERRNO = ['ENOSPC', 'EMFILE', 'ENFILE', 'EAGAIN', 'ENOMEM'];

export function passes(result: StepResult): boolean {
  const code = (result.error as NodeJS.ErrnoException | undefined)?.code;
  if (code && PASSING_ERRNO.includes(code)) return true;
  return result.tail.some((line) => PASSING.some((re) => re.test(line)));
}
