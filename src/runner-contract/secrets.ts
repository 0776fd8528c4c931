import fs from 'node:fs';

/**
 * How a workspace hands the runner its secrets: never through the environment, which every
 * process of the same user can read in `/proc/<pid>/environ` and which every child inherits.
 *
 * The secrets are `NAME=value` lines (no quoting, no expansion; blank lines and `#` comments are
 * skipped), read once at start from
 * - `BATON_SECRETS_FD=N`: an inherited descriptor (the local provider passes an already unlinked
 *   0600 file as fd 3), read to its end and closed, or
 * - `BATON_SECRETS_FILE=PATH`: a file only its owner may read (mode 0600 or stricter), read and
 *   deleted at once (a Coder template writes it in its startup script).
 * Either way nothing of it is left behind for the agent to find.
 */
export const RUNNER_SECRETS = [
  'CALLBACK_TOKEN',
  'GITEA_TOKEN',
  'CLAUDE_CODE_OAUTH_TOKEN',
  // The other agents' credentials (src/agents/: each adapter's `credential.secret`); a run gets
  // only its own agent's, and the runner hands it to that agent alone.
  'CODEX_API_KEY',
  'GEMINI_API_KEY',
  'OPENCODE_API_KEY',
] as const;

export type RunnerSecretName = (typeof RUNNER_SECRETS)[number];
export type RunnerSecrets = Partial<Record<RunnerSecretName, string>>;

/** The variables that point at the secrets; removed with the secrets themselves. */
export const SECRETS_SOURCE_ENV = ['BATON_SECRETS_FD', 'BATON_SECRETS_FILE'] as const;

export interface SecretsIntake {
  secrets: RunnerSecrets;
  /** Things to tell the operator that do not stop the run (secrets found in the environment). */
  warnings: string[];
}

/** Thrown when the secrets cannot be read; the message names the source and never a value. */
export class SecretsError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SecretsError';
  }
}

/** The text `readRunnerSecrets` parses. Values must be single-line. */
export function formatRunnerSecrets(secrets: RunnerSecrets): string {
  return RUNNER_SECRETS.flatMap((name) => {
    const value = secrets[name];
    if (value === undefined || value === '') return [];
    if (/[\r\n]/.test(value)) throw new SecretsError(`${name} must be a single line`);
    return [`${name}=${value}\n`];
  }).join('');
}

export function parseRunnerSecrets(text: string, source: string): RunnerSecrets {
  const secrets: RunnerSecrets = {};
  text.split(/\r?\n/).forEach((line, index) => {
    if (line.trim() === '' || line.trimStart().startsWith('#')) return;
    const eq = line.indexOf('=');
    const name = eq > 0 ? line.slice(0, eq).trim() : '';
    if (!(RUNNER_SECRETS as readonly string[]).includes(name)) {
      // Only the name: the line may be a secret itself.
      throw new SecretsError(
        `${source} line ${index + 1}: expected NAME=value with NAME one of ${RUNNER_SECRETS.join(', ')}, got ${name ? `"${name}"` : 'a line without a known name'}`,
      );
    }
    secrets[name as RunnerSecretName] = line.slice(eq + 1).trim();
  });
  return secrets;
}

/**
 * Reads the runner's secrets and removes every trace of them from `env` (the object itself is
 * changed, so pass `process.env` to keep them from every child process).
 */
export function readRunnerSecrets(env: NodeJS.ProcessEnv): SecretsIntake {
  const warnings: string[] = [];
  const fdText = env.BATON_SECRETS_FD?.trim();
  const file = env.BATON_SECRETS_FILE?.trim();
  let secrets: RunnerSecrets = {};
  try {
    if (fdText) secrets = readFromDescriptor(fdText);
    else if (file) secrets = readFromFile(file);
  } finally {
    for (const name of SECRETS_SOURCE_ENV) delete env[name];
  }

  // The old contract (secrets as environment variables) still works, with a warning, so a
  // workspace template can move to BATON_SECRETS_FILE at its own pace. Either way they leave the
  // environment now, before any child process exists.
  const fromEnv = RUNNER_SECRETS.filter((name) => env[name] !== undefined && env[name]!.trim() !== '');
  for (const name of fromEnv) {
    if (secrets[name] === undefined) secrets[name] = env[name]!.trim();
  }
  if (fromEnv.length > 0) {
    warnings.push(
      `${fromEnv.join(', ')} came from the environment, where other processes of the workspace can read them; pass them in a 0600 file (BATON_SECRETS_FILE) instead`,
    );
  }
  for (const name of RUNNER_SECRETS) delete env[name];
  return { secrets, warnings };
}

function readFromDescriptor(text: string): RunnerSecrets {
  const fd = Number(text);
  if (!Number.isInteger(fd) || fd < 3) {
    throw new SecretsError(`BATON_SECRETS_FD must be an inherited descriptor number >= 3, got "${text}"`);
  }
  let content: string;
  try {
    content = fs.readFileSync(fd, 'utf8');
  } catch (err) {
    throw new SecretsError(`BATON_SECRETS_FD ${fd} cannot be read (${(err as NodeJS.ErrnoException).code ?? err})`, { cause: err });
  } finally {
    // Closed either way: a child started later must not inherit it (an unlinked file can be re-read).
    try {
      fs.closeSync(fd);
    } catch {
      // Already closed.
    }
  }
  return parseRunnerSecrets(content, `BATON_SECRETS_FD ${fd}`);
}

function readFromFile(file: string): RunnerSecrets {
  let stat: fs.Stats;
  try {
    stat = fs.statSync(file);
  } catch (err) {
    throw new SecretsError(`BATON_SECRETS_FILE ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? err})`, { cause: err });
  }
  if (!stat.isFile()) throw new SecretsError(`BATON_SECRETS_FILE ${file} is not a regular file`);
  let content: string;
  try {
    if ((stat.mode & 0o077) !== 0) {
      throw new SecretsError(
        `BATON_SECRETS_FILE ${file} can be read by others (mode ${(stat.mode & 0o777).toString(8).padStart(4, '0')}); create it with mode 0600`,
      );
    }
    content = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if (err instanceof SecretsError) throw err;
    throw new SecretsError(`BATON_SECRETS_FILE ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? err})`, { cause: err });
  } finally {
    // Removed even when refused: a secret that others could read is spent either way.
    fs.rmSync(file, { force: true });
  }
  return parseRunnerSecrets(content, `BATON_SECRETS_FILE ${file}`);
}
