import path from 'node:path';
import { createConfigLoader, sensitiveVariables, type Env, type LoadedSettings, type LoadReport } from '../config-schema/index.js';
import { agentAdapter, type AgentName, type AgentsConfig } from '../agents/index.js';
import { agentEnvProblems, findCommand } from '../runner-contract/index.js';
import { SECTIONS } from './config-sections.js';
import type { Config, RootSettings } from './config-types.js';
import { rootNode } from './root-section.js';

export type { Env };

const LOADER = createConfigLoader<Config>({
  root: { node: rootNode, resolve: (values, report) => resolveRoot(values as never, report) },
  sections: SECTIONS,
  extra: fromEnvironment,
});

/** The whole of baton.yaml: the root keys (./root-section.ts), then every module's section. */
export const FILE_NODE = LOADER.node;

export type LoadedConfig = LoadedSettings<Config>;

/**
 * The variables that carry secrets: every sensitive setting's variable (from the sections), and
 * the agents' own credentials and the CLI's token, which baton never reads but must not pass on.
 * `baton serve` removes them from its environment once the config is loaded, so no child
 * process (git, a runner) ever inherits them.
 */
export const SECRET_ENV: readonly string[] = [
  ...sensitiveVariables(FILE_NODE),
  'CLAUDE_CODE_OAUTH_TOKEN',
  'ANTHROPIC_API_KEY',
  'BATON_TOKEN',
];

/** Runner settings a local workspace inherits from baton's own environment (see `baton agent --help`). */
export const AGENT_PASSTHROUGH_ENV = [
  'BATON_INSTALL_COMMAND',
  'BATON_BUILD_COMMAND',
  'BATON_BRANCH',
  'BATON_AGENT_COMMAND',
  'BATON_AGENT_OUTPUT',
  'BATON_KILL_GRACE_MS',
  'IS_SANDBOX',
] as const;

/**
 * The one configuration pass: environment plus baton.yaml (`BATON_CONFIG`, or `./baton.yaml` when
 * present) into one resolved, frozen Config. The environment wins over the file, the file over the
 * defaults. `baton serve`, `baton config check` and the tests all call this, so they cannot
 * disagree. Throws ConfigError listing every problem, one line each.
 */
export function loadConfig(env: Env = process.env, cwd = process.cwd()): LoadedConfig {
  return LOADER.load(env, cwd);
}

/** What the configuration holds besides the sections: the runner settings local workspaces inherit. */
function fromEnvironment(report: LoadReport, resolved: Record<string, unknown>): Pick<Config, 'agentEnv'> {
  const { env } = report;
  report.problems.push(...missingAgentProblems(resolved as never, env, report.cwd));
  if (env.REDIS_URL) {
    report.warnings.push(
      'REDIS_URL is set but baton no longer uses Redis: the queue lives in the database. ' +
        'Remove REDIS_URL; set DATABASE_URL (default sqlite:DATA_DIR/baton.db, or postgres://… to share the queue between replicas).',
    );
  }
  const agentEnv = Object.fromEntries(AGENT_PASSTHROUGH_ENV.filter((k) => env[k] !== undefined).map((k) => [k, env[k]!]));
  report.problems.push(...agentEnvProblems(agentEnv));
  return { agentEnv };
}

/**
 * The root keys. The workspace provider, when not given, follows the Coder settings: the
 * original orchestrator ran on Coder with CODER_URL and CODER_TOKEN and had no such variable.
 */
function resolveRoot(
  v: {
    port: number;
    host: string;
    logLevel: RootSettings['logLevel'];
    dataDir: string;
    minFreeSpaceMb: number;
    workspaceProvider?: RootSettings['workspaceProvider'];
    callbackUrl?: string;
    publicUrl?: string;
    staleWorkspaceMinutes: number;
    sweepMinutes: number;
    coder: { url?: string; token?: string };
  },
  out: LoadReport,
): RootSettings {
  let workspaceProvider = v.workspaceProvider;
  if (workspaceProvider === undefined) {
    if (v.coder.url && v.coder.token) {
      workspaceProvider = 'coder';
      const reason = 'CODER_URL and CODER_TOKEN are set';
      out.sources.set('workspaceProvider', { from: 'inferred', reason });
      out.notices.push(
        `WORKSPACE_PROVIDER is not set and ${reason}: using the Coder provider. Set WORKSPACE_PROVIDER=local to run agents as local processes instead.`,
      );
    } else {
      workspaceProvider = 'local';
      if (v.coder.url || v.coder.token) {
        const [given, missing] = v.coder.url ? ['CODER_URL', 'CODER_TOKEN'] : ['CODER_TOKEN', 'CODER_URL'];
        out.warnings.push(
          `${given} is set but ${missing} is not, so agents run as local processes on this machine. ` +
            `Set ${missing} (and CODER_TEMPLATE_ID) to use Coder, or WORKSPACE_PROVIDER=local to say local is meant.`,
        );
      }
    }
  }
  if (workspaceProvider === 'coder' && v.callbackUrl === undefined) {
    out.problems.push(
      'CALLBACK_URL is required when WORKSPACE_PROVIDER=coder: the base URL at which workspaces reach baton (e.g. https://baton.example.com). ' +
        'The default, http://127.0.0.1:PORT, is the workspace itself as seen from inside it.',
    );
  }
  return {
    port: v.port,
    host: v.host,
    logLevel: v.logLevel,
    dataDir: path.resolve(out.cwd, v.dataDir),
    minFreeSpaceBytes: Math.round(v.minFreeSpaceMb * 1024 * 1024),
    workspaceProvider,
    callbackUrl: v.callbackUrl ?? `http://127.0.0.1:${v.port || 3000}`,
    ...(v.publicUrl ? { publicUrl: v.publicUrl } : {}),
    staleWorkspaceMinutes: v.staleWorkspaceMinutes,
    sweepMinutes: v.sweepMinutes,
  };
}

/**
 * Each agent the configuration names (a stage's `agent`, or `agents.default`) whose CLI local
 * runs would not find: refused now, naming the agent and its stage, rather than failing each run.
 * Coder workspaces bring their own CLIs (the template installs them), so only local runs are
 * checked. Claude Code as the unnamed default is left to `/ready` and `baton doctor`, as before.
 */
function missingAgentProblems(
  resolved: {
    workspaceProvider: string;
    agents: AgentsConfig;
    pipeline: { stages: ReadonlyArray<{ name: string; agent?: AgentName }> };
  },
  env: Env,
  cwd: string,
): string[] {
  if (resolved.workspaceProvider !== 'local') return [];
  const named: Array<{ agent: AgentName; where: string }> = resolved.pipeline.stages
    .filter((s) => s.agent !== undefined)
    .map((s) => ({ agent: s.agent!, where: `pipeline.stages.${s.name}.agent` }));
  if (resolved.agents.default !== 'claude') named.push({ agent: resolved.agents.default, where: 'agents.default' });
  const problems: string[] = [];
  for (const { agent, where } of named) {
    if (agent === 'text') continue;
    const adapter = agentAdapter(agent);
    const executable = resolved.agents.settings[agent].command?.[0] ?? adapter.executable;
    if (findCommand(executable, env.PATH, cwd) === null) {
      problems.push(
        `${where} is ${agent}, but its CLI "${executable}" is not on PATH (${env.PATH ?? 'unset'}): install ${adapter.title} (npm install -g ${adapter.npmPackage}), or set agents.${agent}.command to its path`,
      );
    }
  }
  return [...new Set(problems)];
}
