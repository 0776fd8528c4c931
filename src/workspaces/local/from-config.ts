import path from 'node:path';
import { agentAdapter, agentsInUse, isAgentName, type AgentName, type AgentsConfig } from '../../agents/index.js';
import { findCommand } from '../../runner-contract/index.js';
import type { ResolvedOf } from '../../config-schema/index.js';
import { runAllowList, type EgressRefusal, type EgressSettings } from '../../egress/index.js';
import type { claudeSection } from '../config-section.js';
import type { WorkspaceProvider } from '../types.js';
import type { LocalProviderOptions } from './options.js';
import { createLocalProvider } from './provider.js';
import { isInside, runtimePaths } from './sandbox.js';
import { hiddenPaths, type HiddenPathsInput } from './hidden-paths.js';
import type { LocalSettings } from './settings.js';

/** What the local provider is made from: baton's own address and paths, and the sections it reads. */
type LocalConfig = HiddenPathsInput & {
  host: string;
  port: number;
  agentEnv: Readonly<Record<string, string>>;
  claude: ResolvedOf<typeof claudeSection>;
  egress: EgressSettings;
  agents: Pick<AgentsConfig, 'default' | 'settings'>;
  pipeline: { stages: ReadonlyArray<{ agent?: AgentName }> };
  /** GitHub's REST API root: a GitHub run reaches it directly. */
  github?: { apiUrl?: string };
};

/**
 * The local provider from the resolved config and the `local:` settings: runners are
 * `node <baton>/bin/baton.js agent`, in a bubblewrap sandbox unless `local.sandbox: none`;
 * `/ready` runs `baton agent --check` in such a sandbox.
 */
export function createLocalProviderFromConfig(
  config: LocalConfig,
  settings: LocalSettings,
  deps: {
    batonBin: string;
    execPath?: string;
    /** Each connection a run's egress gate refused: the run's log and the counter. */
    onEgressRefused?: (run: { runId: number; stage: string; workspace: string }, refusal: EgressRefusal) => void;
  } & Pick<LocalProviderOptions, 'onError' | 'spawn'>,
): WorkspaceProvider {
  const execPath = deps.execPath ?? process.execPath;
  const runner = [execPath, deps.batonBin, 'agent'];
  const readOnlyPaths = [...runtimePaths(execPath, deps.batonBin), ...settings.readOnlyPaths];
  // Every agent a stage may start: each one's executable must be visible inside the sandbox.
  const agents = agentsInUse(config.agents.default, config.pipeline.stages).flatMap((name) => {
    if (name === 'text') return [];
    const configured = config.agents.settings[name].command;
    const raw = configured
      ? JSON.stringify(configured)
      : name === 'claude'
        ? config.agentEnv.BATON_AGENT_COMMAND
        : JSON.stringify([agentAdapter(name).executable]);
    const found = agentExecutable(raw, readOnlyPaths, hiddenPaths(config));
    return found ? [found] : [];
  });
  return createLocalProvider({
    dataDir: config.dataDir,
    command: runner,
    check: checkCommand(runner, config),
    env: { ...config.agentEnv },
    secrets: config.claude.oauthToken ? { CLAUDE_CODE_OAUTH_TOKEN: config.claude.oauthToken } : {},
    sandbox:
      settings.sandbox === 'none'
        ? { kind: 'none' }
        : {
            kind: 'bwrap',
            readOnlyPaths: [...readOnlyPaths, ...new Set(agents)],
            hiddenPaths: hiddenPaths(config),
            gitConfig: settings.gitConfig,
            claudeCredentials: settings.claudeCredentials,
            rootUser: settings.rootUser,
            runUids: settings.runUids,
          },
    egress:
      config.egress.gate === 'off'
        ? false
        : {
            rules: (spec) =>
              runAllowList({
                stage: spec.stage,
                forgeUrl: spec.forgeUrl,
                cloneUrl: spec.cloneUrl,
                // A run with a forge credential reaches its forge only through baton's gateway (its
                // forge and clone URLs are baton's); one without (a declared repository) reaches a
                // GitHub repository directly, whose API root is another host (api.github.com).
                forgeUrls: spec.forge === 'github' && !spec.forgeToken && config.github?.apiUrl ? [config.github.apiUrl] : [],
                batonUrl: spec.callbackUrl,
                // The run's own agent's API and login hosts, on top of the configured agent hosts.
                settings: { ...config.egress, agentHosts: [...config.egress.agentHosts, ...agentHostsOf(spec.agent)] },
              }),
            deny: unreachableServices(config),
            onRefused: deps.onEgressRefused,
          },
    runnerNice: settings.runnerNice,
    onError: deps.onError,
    spawn: deps.spawn,
  });
}

/**
 * The agent command's executable (the first word of BATON_AGENT_COMMAND, else `claude`) as found
 * on baton's PATH, when runs would not see it otherwise: a single-file agent installed in a home
 * directory (Claude Code's own installer puts one under ~/.local), or a script given by absolute
 * path. Bound read-only at the same path, that file alone; an agent that needs more of its
 * installation still needs `local.readOnlyPaths`. Undefined when runs see it already, it is not
 * found (the readiness check says so), or it lies where runs must never look.
 */
function agentExecutable(agentCommand: string | undefined, visible: readonly string[], hidden: readonly string[]): string | undefined {
  let command = 'claude';
  if (agentCommand !== undefined) {
    try {
      const parsed: unknown = JSON.parse(agentCommand);
      if (!Array.isArray(parsed) || typeof parsed[0] !== 'string') return undefined;
      command = parsed[0];
    } catch {
      // The runner reports a malformed BATON_AGENT_COMMAND itself.
      return undefined;
    }
  }
  // A relative path is looked up from the run's workspace, not from here.
  if (command.includes('/') && !path.isAbsolute(command)) return undefined;
  const found = findCommand(command, process.env.PATH);
  if (found === null) return undefined;
  const seen = (p: string) => ['/usr', ...visible].some((dir) => isInside(path.resolve(p), path.resolve(dir)));
  if (seen(found) || hidden.some((h) => isInside(path.resolve(found), path.resolve(h)))) return undefined;
  return found;
}

/**
 * `/ready`'s check: `baton agent --check` with a `--check-agent` for every agent a stage may start
 * (its configured command, Claude Code's from BATON_AGENT_COMMAND), so a pipeline without Claude
 * Code needs no `claude`, and a Codex stage's missing `codex` is found before its run.
 */
export function checkCommand(runner: readonly string[], config: Pick<LocalConfig, 'agents' | 'pipeline' | 'agentEnv'>): string[] {
  const agents = agentsInUse(config.agents.default, config.pipeline.stages).flatMap((name) => {
    // A text-mode agent's command is a template its runs fill in: nothing to look up before.
    if (name === 'text') return [];
    const configured = config.agents.settings[name].command;
    const command = configured ? JSON.stringify(configured) : name === 'claude' ? config.agentEnv.BATON_AGENT_COMMAND : undefined;
    return [`--check-agent=${name}${command ? `=${command}` : ''}`];
  });
  return [...runner, '--check', ...agents];
}

function agentHostsOf(agent: string | undefined): readonly string[] {
  return agent && isAgentName(agent) && agent !== 'claude' ? agentAdapter(agent).egressHosts : [];
}

/** Said at every start while it is true. */
export const NO_SANDBOX_WARNING =
  "local.sandbox is none: local runs are NOT isolated. Each runner and agent runs as baton's own user and can read baton's " +
  "environment (/proc/<pid>/environ), the database, the config file, other runs' workspaces and their callback tokens. " +
  'Remove local.sandbox: none (and install bubblewrap) unless every repository and issue author is trusted.';

/**
 * What a run must never reach, whatever its allow-list says, and what `/ready` proves it cannot:
 * baton's own listener and its database (when it is a server).
 */
function unreachableServices(config: LocalConfig): { host: string; port: number }[] {
  const services = [{ host: config.host, port: config.port }];
  const url = config.database.url;
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) {
    try {
      const parsed = new URL(url);
      // A socket directory as host (postgres:///db?host=/run/postgresql) is not reachable from a sandbox at all.
      if (parsed.hostname !== '') services.push({ host: parsed.hostname.replace(/^\[(.*)\]$/, '$1'), port: Number(parsed.port || 5432) });
    } catch {
      // The store reports a malformed URL.
    }
  }
  return services;
}

/** Said at every start while it is true. */
export const NO_EGRESS_GATE_WARNING =
  "egress.gate is off: local runs share the host's network. An agent can reach baton's database, its API, every loopback " +
  'service and cloud metadata addresses. Remove egress.gate: off unless every repository and issue author is trusted.';
