import fs from 'node:fs';
import { formatRunnerEnv, formatRunnerSecrets, RUNNER_SECRETS, type RunnerSecrets } from '../../runner-contract/index.js';
import type { WorkspaceSpec } from '../types.js';
import type { LocalContext } from './options.js';
import { SANDBOX_HOME, SANDBOX_WORKDIR } from './sandbox.js';

// What a local runner is given: its environment (baton's allowed variables, the settings, the
// run's own) and its secrets, which go through a descriptor and never through the environment.

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

/** Environment names that find a run's processes when no recorded pid does (see killLeftovers). */
export const CLAIM_VARIABLE = 'BATON_WORKSPACE_CLAIM';
export const WORKDIR_VARIABLE = 'BATON_WORKDIR';
/** The descriptor number of the runner's secrets. */
export const SECRETS_FD = 3;

/**
 * The run's variables, as `baton agent` reads them (see src/cli/agent-settings.ts). No secrets: those go
 * through `runnerSecrets`.
 */
export function runnerEnv(spec: WorkspaceSpec): Record<string, string> {
  return formatRunnerEnv({
    stage: spec.stage,
    runId: spec.runId,
    issueNumber: spec.number,
    forgeUrl: spec.forgeUrl,
    forge: spec.forge,
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

/** baton's environment (only the allowed variables), the settings, then what the sandbox dictates. */
export function baseEnv(ctx: LocalContext, workDir: string): Record<string, string> {
  const inherited = Object.fromEntries(
    (ctx.options.inheritEnv ?? DEFAULT_INHERIT).flatMap((key) => (process.env[key] !== undefined ? [[key, process.env[key]!]] : [])),
  );
  const env: Record<string, string> = { ...inherited, ...withoutSecrets(ctx.options.env ?? {}) };
  if (ctx.sandbox.kind === 'bwrap') {
    return { ...env, HOME: SANDBOX_HOME, TMPDIR: '/tmp', BATON_WORKDIR: SANDBOX_WORKDIR, BATON_SANDBOX: 'bwrap' };
  }
  return { ...env, BATON_WORKDIR: workDir };
}

/** The spec's extra variables that are valid names. */
function extraOf(spec: WorkspaceSpec): Record<string, string> {
  return Object.fromEntries(Object.entries(spec.extra ?? {}).filter(([key]) => /^[A-Z_][A-Z0-9_]*$/.test(key)));
}

/**
 * The whole environment of a run's runner: `network` (the gate's proxy and the callback through
 * it) comes after the run's own, so it replaces what baton's env or the spec said.
 */
export function runEnv(
  ctx: LocalContext,
  spec: WorkspaceSpec,
  workDir: string,
  network: Record<string, string>,
  claim: string,
): Record<string, string> {
  return {
    ...baseEnv(ctx, workDir),
    ...withoutSecrets(extraOf(spec)),
    ...runnerEnv(spec),
    ...network,
    BATON_AGENT_LOG_PORT: String(ctx.options.logPort ?? 0),
    BATON_SECRETS_FD: String(SECRETS_FD),
    [CLAIM_VARIABLE]: claim,
  };
}

/** Every secret of a run's runner: the settings', the provider's, the spec's extra ones, the run's own. */
export function runSecrets(ctx: LocalContext, spec: WorkspaceSpec): RunnerSecrets {
  return {
    ...secretsIn(ctx.options.env ?? {}),
    ...ctx.options.secrets,
    ...secretsIn(extraOf(spec)),
    ...runnerSecrets(spec),
  };
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
export function openSecrets(file: string, secrets: RunnerSecrets): number {
  fs.rmSync(file, { force: true });
  fs.writeFileSync(file, formatRunnerSecrets(secrets), { mode: 0o600, flag: 'wx' });
  try {
    return fs.openSync(file, 'r');
  } finally {
    fs.rmSync(file, { force: true });
  }
}
