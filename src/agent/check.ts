import { agentAdapter, type AgentName } from '../agents/index.js';
import { findCommand } from '../runner-contract/index.js';
import { probeUnreachable } from './network-probe.js';
import { startProcess, type SpawnFunction } from './process-group.js';

export interface RunnerCheck {
  ok: boolean;
  /** What was found, or what is missing and what to do about it. */
  message: string;
}

/**
 * `baton agent --check`: whether a run could start its agent here, with the PATH and the
 * sandbox the runner really has. The local provider runs it in a workspace's sandbox for
 * `/ready`, so an agent command that is missing (or only on the PATH of baton's own shell) is
 * reported before a run needs it.
 */
export async function checkRunner(options: {
  env: NodeJS.ProcessEnv;
  cwd: string;
  agentCommand?: readonly string[];
  /** @default 'claude' */
  agent?: AgentName;
  /**
   * Every agent the pipeline's stages may start here (`--check-agent`), each with its command
   * (absent: the adapter's executable); when given, each must be found, and `agent` and
   * `agentCommand` are not looked at.
   */
  agents?: ReadonlyArray<{ agent: AgentName; command?: readonly string[] }>;
  /** How steps are started (the nested sandbox when the runner is sandboxed). */
  spawn?: SpawnFunction;
  /** `host:port` of what a run must not connect to (baton's port, its database), from `BATON_CHECK_UNREACHABLE`. */
  unreachable?: readonly string[];
  /** The run's egress gate (`BATON_EGRESS_SOCKET`): the targets above must be refused through it too. */
  egressSocket?: string;
}): Promise<RunnerCheck> {
  const reached = await probeUnreachable(options.unreachable ?? [], options.egressSocket);
  if (reached.length > 0) {
    return {
      ok: false,
      message: `the run's network is not contained: ${reached.join('; ')} (runs must reach baton and its database only through the egress gate; see egress.gate in docs/configuration.md)`,
    };
  }
  const wanted = options.agents?.length ? options.agents : [{ agent: options.agent ?? 'claude', command: options.agentCommand }];
  const found: string[] = [];
  for (const { agent, command: given } of wanted) {
    const adapter = agentAdapter(agent);
    const command = (given ?? [adapter.executable])[0] ?? '';
    const path = findCommand(command, options.env.PATH, options.cwd);
    if (path === null) {
      const setting = options.agents?.length
        ? `agents.${agent}.command${agent === 'claude' ? ' (or BATON_AGENT_COMMAND)' : ''}`
        : 'BATON_AGENT_COMMAND';
      const how =
        given || !adapter.npmPackage
          ? `fix ${setting}`
          : `install ${adapter.title} where the runner finds it (npm install -g ${adapter.npmPackage}), or set ${setting} to its absolute path`;
      const whose = options.agents?.length ? ` (${adapter.title}, agent ${agent})` : '';
      return {
        ok: false,
        message: `agent command "${command}"${whose} is not found on the runner's PATH (${options.env.PATH ?? 'unset'}): ${how}`,
      };
    }
    found.push(options.agents?.length ? `${agent} ${path}` : path);
  }
  if (options.spawn) {
    const output: string[] = [];
    const keep = (line: string) => {
      if (line.trim() !== '') output.push(line.trim());
    };
    const proc = startProcess('true', [], {
      cwd: options.cwd,
      env: options.env,
      spawn: options.spawn,
      onStdoutLine: keep,
      onStderrLine: keep,
    });
    const exit = await proc.exited;
    if (exit.error || exit.code !== 0) {
      const why = exit.error?.message ?? output.at(-1) ?? `exit code ${exit.code}${exit.signal ? `, signal ${exit.signal}` : ''}`;
      return { ok: false, message: `the agent's nested sandbox cannot be started: ${why}` };
    }
  }
  return { ok: true, message: options.agents?.length ? `agent commands: ${found.join(', ')}` : `agent command ${found[0]}` };
}
