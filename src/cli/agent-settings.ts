import { AGENT_NAMES, agentAdapter, isAgentName, type AgentName, type ModelPrice } from '../agents/index.js';
import type { RunAgentOptions } from '../agent/index.js';
// The same checks the configuration pass applies to what baton passes on (config check, doctor).
import { DEPLOY_ENV_PATTERN } from '../pipeline/index.js';
import { agentCommandProblem, parseAgentCommand, RUNNER_ENV, SETUP_TOKENS, type SetupToken } from '../runner-contract/index.js';

// What `baton agent` reads of its run from its flags and environment, as a provider wrote them
// (`formatRunnerEnv`): every value checked, every wrong one named.

export type FlagValues = Record<string, string | boolean | undefined>;

/** A flag's value, else its environment variable's; blank counts as unset. */
export type Lookup = (flag: string, name: string) => string | undefined;

export function lookupIn(values: FlagValues, env: NodeJS.ProcessEnv): Lookup {
  return (flag, name) => {
    const v = values[flag];
    const value = typeof v === 'string' ? v : env[name];
    return value === undefined || value.trim() === '' ? undefined : value.trim();
  };
}

/** What the runner reads of its run from flags and environment (secrets and callback aside). */
export type RunnerSettings = Omit<
  RunAgentOptions,
  | 'callbackUrl'
  | 'progressUrl'
  | 'callbackToken'
  | 'env'
  | 'claudeOauthToken'
  | 'agentSecret'
  | 'forgeToken'
  | 'spawn'
  | 'signal'
  | 'onLogLine'
> & { callbackMaxRetryMs: number };

/**
 * Reads the run's settings as a provider wrote them (`formatRunnerEnv`), flags first. Every value
 * that is wrong is named in `problems`; the settings then hold the defaults in its place.
 */
export function readRunnerSettings(values: FlagValues, env: NodeJS.ProcessEnv): { settings: RunnerSettings; problems: string[] } {
  const opt = lookupIn(values, env);
  const problems: string[] = [];
  const int = (flag: string, name: string, fallback: number, min: number): number => {
    const raw = opt(flag, name);
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min) {
      problems.push(`${name} must be a whole number >= ${min}, got "${raw}"`);
      return fallback;
    }
    return n;
  };
  const stage = opt('task-type', RUNNER_ENV.stage);
  if (!stage) problems.push('TASK_TYPE is not set (the stage to run, e.g. develop)');
  const logPort = int('log-port', RUNNER_ENV.logPort, 13338, 0);
  if (logPort > 65535) problems.push(`BATON_AGENT_LOG_PORT must be a whole number between 0 and 65535, got "${logPort}"`);
  const maxDurationMs = int('max-duration-ms', RUNNER_ENV.maxDurationMs, 90 * 60_000, 1);
  const tokenCap = int('token-cap', RUNNER_ENV.tokenCap, 0, 0);
  const callbackMaxRetryMs = int('', RUNNER_ENV.callbackMaxRetryMs, 15 * 60_000, 0);
  const killGraceMs = int('', RUNNER_ENV.killGraceMs, 10_000, 0);
  const { agentCommand, outputFormat, agent, model, agentPrice } = readAgentCommand(opt, problems);
  const deployEnv = opt('deploy-env', RUNNER_ENV.deployEnv);
  if (deployEnv !== undefined && !DEPLOY_ENV_PATTERN.test(deployEnv)) {
    problems.push(`DEPLOY_ENV must be an environment name (letters, digits, ".", "_", "-"), got ${JSON.stringify(deployEnv)}`);
  }
  const stageTable = readStageTable(env, problems);
  // The reply is a person's comment: taken as it is (not trimmed), never parsed.
  const resumeSessionId = env[RUNNER_ENV.resumeSessionId]?.trim() || undefined;
  const resume = resumeSessionId
    ? { sessionId: resumeSessionId, reply: env[RUNNER_ENV.resumeReply] ?? '', by: env[RUNNER_ENV.resumeBy]?.trim() || 'someone' }
    : undefined;
  return {
    settings: {
      stage: stage ?? '',
      issueNumber: opt('issue', RUNNER_ENV.issueNumber),
      deployEnv,
      cloneUrl: opt('clone-url', RUNNER_ENV.cloneUrl),
      repoName: opt('repo', RUNNER_ENV.repo),
      workdir: opt('workdir', RUNNER_ENV.workdir) ?? process.cwd(),
      branch: opt('branch', RUNNER_ENV.branch),
      arguments: opt('arguments', RUNNER_ENV.arguments),
      ...stageTable,
      agentCommand,
      outputFormat,
      agent,
      model,
      agentPrice,
      installCommand: opt('install', RUNNER_ENV.installCommand),
      buildCommand: opt('build', RUNNER_ENV.buildCommand),
      maxDurationMs,
      tokenCap,
      killGraceMs,
      callbackMaxRetryMs,
      logServer: logPort === 0 ? false : { port: logPort, host: env[RUNNER_ENV.logHost]?.trim() || undefined },
      ...(resume ? { resume } : {}),
    },
    problems,
  };
}

function readAgentCommand(
  opt: Lookup,
  problems: string[],
): { agentCommand?: string[]; outputFormat: 'stream-json' | 'text'; agent: AgentName; model?: string; agentPrice?: ModelPrice } {
  let agentCommand: string[] | undefined;
  const rawCommand = opt('agent-command', RUNNER_ENV.agentCommand);
  if (rawCommand !== undefined) {
    agentCommand = parseAgentCommand(rawCommand);
    if (agentCommand === undefined) problems.push(agentCommandProblem(rawCommand));
  }
  const rawAgent = opt('agent', RUNNER_ENV.agent) ?? 'claude';
  let agent: AgentName = 'claude';
  if (isAgentName(rawAgent)) agent = rawAgent;
  else problems.push(agentNameProblem(rawAgent));
  const model = opt('model', RUNNER_ENV.agentModel);
  const agentPrice = readPrice(opt('', RUNNER_ENV.agentPrice), problems);
  if (model !== undefined && !MODEL_NAME.test(model)) {
    problems.push(
      `BATON_AGENT_MODEL must be a model name such as gpt-5-codex or anthropic/claude-sonnet-4-5, got ${JSON.stringify(model)}`,
    );
  }
  const outputFormat = opt('output-format', RUNNER_ENV.agentOutput) ?? (agent === 'text' ? 'text' : 'stream-json');
  if (outputFormat !== 'stream-json' && outputFormat !== 'text') {
    problems.push(`BATON_AGENT_OUTPUT must be stream-json or text, got "${outputFormat}"`);
  }
  if (outputFormat === 'stream-json' && agent !== 'text' && agentCommand?.some((arg) => arg.includes('{prompt}'))) {
    const adapter = agentAdapter(agent);
    problems.push(
      agent === 'claude'
        ? `BATON_AGENT_COMMAND for stream-json output names the Claude Code executable only, such as ["claude"] (baton adds -p, the output options, permissions, model and the prompt); got ${JSON.stringify(rawCommand)}`
        : `BATON_AGENT_COMMAND for ${adapter.title} names its executable only, such as ["${adapter.executable}"] (baton adds the headless options, the model and the prompt); got ${JSON.stringify(rawCommand)}`,
    );
  }
  if (outputFormat === 'text' && !agentCommand)
    problems.push('BATON_AGENT_OUTPUT=text needs BATON_AGENT_COMMAND (the argv of the CLI agent)');
  return {
    agentCommand,
    outputFormat: outputFormat as 'stream-json' | 'text',
    agent: outputFormat === 'text' ? 'text' : agent,
    ...(model !== undefined ? { model } : {}),
    ...(agentPrice ? { agentPrice } : {}),
  };
}

/** BATON_AGENT_PRICE: `{"input":1.25,"cachedInput":0.125,"output":10}`, USD per million tokens. */
function readPrice(raw: string | undefined, problems: string[]): ModelPrice | undefined {
  if (raw === undefined) return undefined;
  try {
    const v: unknown = JSON.parse(raw);
    const ok = (x: unknown) => typeof x === 'number' && Number.isFinite(x) && x >= 0;
    if (v && typeof v === 'object') {
      const p = v as Record<string, unknown>;
      const optional = (k: string) => p[k] === undefined || ok(p[k]);
      if (ok(p.input) && ok(p.output) && optional('cachedInput') && optional('cacheWrite')) return p as unknown as ModelPrice;
    }
  } catch {
    // Reported below.
  }
  problems.push(
    `BATON_AGENT_PRICE must be JSON such as {"input":1.25,"cachedInput":0.125,"output":10} (USD per million tokens), got ${JSON.stringify(raw.slice(0, 200))}`,
  );
  return undefined;
}

export function agentNameProblem(raw: string): string {
  return `BATON_AGENT must be one of ${AGENT_NAMES.join(', ')}, got ${JSON.stringify(raw)}`;
}

/** Model names as the CLIs take them: `opus`, `gpt-5-codex`, `gemini-2.5-pro`, `anthropic/claude-sonnet-4-5`. */
const MODEL_NAME = /^[A-Za-z0-9][A-Za-z0-9._:@/[\]-]{0,127}$/;

/** The stage table's settings baton passes (build kind, setup tokens, permissions) and the sandbox. */
function readStageTable(env: NodeJS.ProcessEnv, problems: string[]): Pick<RunAgentOptions, 'heavy' | 'setupTokens' | 'skipPermissions'> {
  const stageBuild = env[RUNNER_ENV.stageBuild]?.trim() || undefined;
  if (stageBuild !== undefined && stageBuild !== 'heavy' && stageBuild !== 'light') {
    problems.push(`BATON_STAGE_BUILD must be heavy or light, got "${stageBuild}"`);
  }
  const sandbox = env[RUNNER_ENV.sandbox]?.trim() || undefined;
  if (sandbox !== undefined && sandbox !== 'bwrap' && sandbox !== 'auto')
    problems.push(`BATON_SANDBOX must be bwrap, auto or unset, got "${sandbox}"`);
  const setupTokens: SetupToken[] = [];
  for (const token of (env[RUNNER_ENV.setupTokens] ?? '').split(',').map((t) => t.trim())) {
    if (token === '') continue;
    if ((SETUP_TOKENS as readonly string[]).includes(token)) setupTokens.push(token as SetupToken);
    else problems.push(`BATON_SETUP_TOKENS must list ${SETUP_TOKENS.join(', ')} (comma-separated), got "${token}"`);
  }
  const skipPermissions = env[RUNNER_ENV.skipPermissions]?.trim() || undefined;
  if (skipPermissions !== undefined && skipPermissions !== 'true' && skipPermissions !== 'false') {
    problems.push(`BATON_STAGE_SKIP_PERMISSIONS must be true or false, got "${skipPermissions}"`);
  }
  return {
    heavy: stageBuild === undefined ? undefined : stageBuild === 'heavy',
    setupTokens,
    skipPermissions: skipPermissions === undefined ? undefined : skipPermissions === 'true',
  };
}
