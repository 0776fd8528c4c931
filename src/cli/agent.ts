import { parseArgs } from 'node:util';
import {
  checkRunner,
  createCallbackClient,
  gatedFetch,
  guardProcessMemory,
  nestedSandboxProblem,
  nestedSandboxSpawn,
  runAgent,
  startEgressBridge,
  type MemoryGuard,
  type RunAgentOptions,
} from '../agent/index.js';
import { agentAdapter, isAgentName, type AgentName } from '../agents/index.js';
import {
  agentCommandProblem,
  parseAgentCommand,
  readRunnerSecrets,
  RUNNER_ENV,
  SecretsError,
  type RunnerSecrets,
} from '../runner-contract/index.js';
import { agentNameProblem, lookupIn, readRunnerSettings, type FlagValues, type Lookup } from './agent-settings.js';

const HELP = `Usage: baton agent [options]

Runs one pipeline stage inside a workspace: clones the repository, builds the stage prompt from
.claude/commands/<stage>.md, runs the agent, streams its log to the server and always posts the
completion callback. Every option can also be given as the environment variable in brackets.

Options:
  --task-type NAME          stage to run                      [TASK_TYPE]
  --issue N                 issue or PR number                [ISSUE_NUMBER]
  --arguments TEXT          what $ARGUMENTS stands for        [BATON_ARGUMENTS, default: the issue number]
  --clone-url URL           repository to clone               [REPO_CLONE_URL]
  --repo NAME               clone directory name              [GITEA_REPO]
  --deploy-env NAME         target environment (devops)       [DEPLOY_ENV]
  --workdir DIR             where to clone and keep .baton/   [BATON_WORKDIR, default: cwd]
  --branch NAME             working branch                    [BATON_BRANCH, default: develop]
  --callback-url URL        full completion URL               [CALLBACK_URL]
  --progress-url URL        progress URL                      [PROGRESS_URL, default: derived]
  --log-port N              live log HTTP port, 0 = off       [BATON_AGENT_LOG_PORT, default: 13338]
  --max-duration-ms N       longest run                       [BATON_MAX_DURATION_MS, default: 5400000]
  --token-cap N             stop after N tokens, 0 = no cap   [BATON_TOKEN_CAP, default: 0]
  --agent NAME              claude | codex | gemini | opencode | text
                                                              [BATON_AGENT, default: claude]
  --model NAME              the agent's model                 [BATON_AGENT_MODEL, default: the CLI's]
  --agent-command JSON      the agent CLI, a JSON array       [BATON_AGENT_COMMAND, default: the agent's executable]
  --output-format FORMAT    stream-json | text                [BATON_AGENT_OUTPUT, default: stream-json]
  --install CMD             install command (heavy stages)    [BATON_INSTALL_COMMAND]
  --build CMD               build command (heavy stages)      [BATON_BUILD_COMMAND]
  --check                   only check that the agent command (and the nested sandbox) can
                            start here; print what was found, exit 0 or 1
  --check-agent NAME[=JSON] with --check: check this agent's command instead (JSON: its argv,
                            default its executable); repeat it for every agent the stages use
  -h, --help                show this help

Secrets: CALLBACK_TOKEN, GITEA_TOKEN, CLAUDE_CODE_OAUTH_TOKEN and the other agents' keys
(CODEX_API_KEY, GEMINI_API_KEY, OPENCODE_API_KEY) as NAME=value lines, read once
at start from BATON_SECRETS_FILE (a file of mode 0600, deleted once read) or BATON_SECRETS_FD (an
inherited descriptor, closed once read). Secrets in the environment still work but are warned
about: every process of the workspace can read them there. The agent gets GITEA_TOKEN and its
own credential only (in the variables its CLI reads), never CALLBACK_TOKEN; install and build commands get only the tokens
named in BATON_SETUP_TOKENS (forge, agent; comma-separated; default none).
Also read: GITEA_URL, GITEA_ORG, BATON_FORGE (github | gitlab: the agent also gets GITEA_TOKEN
in that forge's variables, GH_TOKEN and GITHUB_API_URL or GITLAB_TOKEN and CI_API_V4_URL), BATON_RUN_ID, BATON_CALLBACK_MAX_RETRY_MS (default 900000),
BATON_KILL_GRACE_MS (default 10000), BATON_AGENT_LOG_HOST (default 127.0.0.1), BATON_STAGE_BUILD
(heavy | light: whether install/build run first; set by baton, default from the built-in stage table),
BATON_SANDBOX (bwrap: the runner is in a bubblewrap sandbox; every step runs in a nested one
that cannot see the runner; auto: the same wherever bubblewrap can start, warned about otherwise; either way the
runner makes itself undumpable, so processes of its uid cannot read its memory), BATON_EGRESS_SOCKET and BATON_EGRESS_PORT (the run's egress gate,
a unix socket, and the port of 127.0.0.1 where the runner relays to it for HTTPS_PROXY; the
callbacks then go through the gate too), BATON_CHECK_UNREACHABLE (host:port,…: --check fails
when any of them connects, directly or through the gate).
BATON_STAGE_SKIP_PERMISSIONS (true | false: the stage's skipPermissions; set by baton, default true).
BATON_RESUME_SESSION_ID, BATON_RESUME_REPLY, BATON_RESUME_BY (set by baton for a conversation's next
turn: the transcript is read back from the server, the session files restored under HOME, the
branch checked out, and the agent resumed with the reply as its prompt).

The agent finds "baton" on its PATH: baton ask "<question>" makes the run wait for a reply
instead of ending (the branch is pushed and the session's transcript kept by the server).

With stream-json output the agent command names the Claude Code executable only: baton runs
<command> -p --output-format stream-json --verbose, then --allowedTools <tools…> from the command
file's allowed-tools (else --dangerously-skip-permissions unless BATON_STAGE_SKIP_PERMISSIONS=false),
--model=<model> from its model, then -- <prompt>, or the prompt on stdin when it is over 100 KiB.
Codex CLI, Gemini CLI and OpenCode get their headless JSON options from baton and the prompt on
stdin (codex exec --json … -, gemini --output-format=stream-json --skip-trust …, opencode run
--format=json …); the agent command names their executable only.
With text output (or --agent text) it is the whole argv of another CLI: each {prompt} is replaced by the prompt;
without {prompt} the prompt goes to stdin.

Exit codes: 0 the stage succeeded and the server was told; 1 the stage failed, timed out or the
server could not be told; 2 the runner is misconfigured (nothing could be reported).
`;

const FLAGS = {
  'task-type': { type: 'string' },
  issue: { type: 'string' },
  arguments: { type: 'string' },
  'clone-url': { type: 'string' },
  repo: { type: 'string' },
  'deploy-env': { type: 'string' },
  workdir: { type: 'string' },
  branch: { type: 'string' },
  'callback-url': { type: 'string' },
  'progress-url': { type: 'string' },
  'log-port': { type: 'string' },
  'max-duration-ms': { type: 'string' },
  'token-cap': { type: 'string' },
  'agent-command': { type: 'string' },
  agent: { type: 'string' },
  model: { type: 'string' },
  'output-format': { type: 'string' },
  install: { type: 'string' },
  build: { type: 'string' },
  check: { type: 'boolean' },
  'check-agent': { type: 'string', multiple: true },
  help: { type: 'boolean', short: 'h' },
} as const;

/**
 * `baton agent`: the in-workspace runner. Returns the exit code; SIGTERM/SIGINT stop the agent
 * and still send the (failed) completion callback before returning.
 */
export async function runAgentCommand(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  let values: FlagValues;
  let checkAgents: string[];
  try {
    const { 'check-agent': repeated, ...single } = parseArgs({ args: argv, options: FLAGS, strict: true, allowPositionals: false }).values;
    values = single;
    checkAgents = repeated ?? [];
  } catch (err) {
    console.error(`baton agent: ${(err as Error).message}\n\n${HELP}`);
    return 2;
  }
  if (values.help) {
    console.log(HELP);
    return 0;
  }
  const opt = lookupIn(values, env);

  // Before the secrets are read: no process of this uid may read them out of this one's memory.
  const guard = guardProcessMemory();
  // Before anything else, and whatever else is wrong: the secrets leave the environment (and a
  // secrets file the disk) before any child process could inherit or find them.
  const secrets = takeSecrets(env);
  if (!secrets) return 2;

  const sandbox = resolveSandbox(env[RUNNER_ENV.sandbox]?.trim() || undefined, guard);
  if (values.check) console.log(guardLine(guard));
  const stepSpawn = sandbox === 'bwrap' ? nestedSandboxSpawn() : undefined;
  const egressSocket = await openEgress(env);
  if (values.check) return checkCommand(opt, env, sandbox, stepSpawn, egressSocket, checkAgents);

  const callback = callbackOf(opt, secrets, egressSocket);
  if (!callback) return 2;

  // From here on every problem is reported to the server as a failed run.
  const { settings, problems } = readRunnerSettings(values, env);
  if (problems.length > 0) return reportMisconfigured(callback, settings.callbackMaxRetryMs, problems);

  return runWithSignals(callback, settings.callbackMaxRetryMs, (signal) => ({
    ...settings,
    ...callback,
    env,
    claudeOauthToken: secrets.CLAUDE_CODE_OAUTH_TOKEN || undefined,
    agentSecret: agentSecretOf(settings.agent ?? 'claude', secrets),
    forgeToken: secrets.GITEA_TOKEN || undefined,
    spawn: stepSpawn,
    signal,
    onLogLine: (line) => console.log(line),
  }));
}

/** The runner's secrets, out of the environment; null (after saying why) when they cannot be read. */
function takeSecrets(env: NodeJS.ProcessEnv): RunnerSecrets | null {
  try {
    const intake = readRunnerSecrets(env);
    for (const warning of intake.warnings) console.error(`baton agent: warning: ${warning}`);
    return intake.secrets;
  } catch (err) {
    if (!(err instanceof SecretsError)) throw err;
    console.error(`baton agent: ${err.message}; the outcome cannot be reported`);
    return null;
  }
}

/**
 * With an egress gate the sandbox has no network of its own: the relay on 127.0.0.1 is how its
 * tools (through HTTPS_PROXY) reach the gate. Returns the gate's socket, for the runner's own calls.
 */
async function openEgress(env: NodeJS.ProcessEnv): Promise<string | undefined> {
  const socketPath = env[RUNNER_ENV.egressSocket]?.trim() || undefined;
  if (!socketPath) return undefined;
  const port = Number(env[RUNNER_ENV.egressPort] ?? '3128');
  try {
    await startEgressBridge({ socketPath, port });
  } catch (err) {
    // Not fatal: the callbacks do not need the relay, and the run's log says why its tools cannot connect.
    console.error(`baton agent: the egress relay on 127.0.0.1:${port} could not start: ${(err as Error).message}`);
  }
  return socketPath;
}

/**
 * `auto`: the nested sandbox wherever it can start (user namespaces allowed), said when it cannot,
 * since without it the agent can read the runner's memory (`/proc/<ppid>/mem`, same uid).
 */
function resolveSandbox(value: string | undefined, guard: MemoryGuard): string | undefined {
  const problem = value === 'auto' ? nestedSandboxProblem() : value === undefined ? 'BATON_SANDBOX is unset' : null;
  if (problem === null) return value === 'auto' ? 'bwrap' : value;
  const exposed = guard.undumpable
    ? "they run as the runner's uid and see its files and processes, not its memory (the runner is undumpable)"
    : `they can read this runner's memory, callback token included (the runner could not make itself undumpable: ${guard.problem})`;
  console.error(
    `baton agent: warning: the nested sandbox is off (${problem}): the agent and the repository's commands are not isolated: ${exposed}`,
  );
  return undefined;
}

/** What `--check` says of the runner's memory. */
function guardLine(guard: MemoryGuard): string {
  return guard.undumpable
    ? 'the runner is undumpable: processes of its uid cannot read its memory or environment'
    : `the runner is dumpable (${guard.problem}): processes of its uid can read its memory`;
}

/** `--check`: can the agent command (and the nested sandbox) start here, and is the network contained. */
async function checkCommand(
  opt: Lookup,
  env: NodeJS.ProcessEnv,
  sandbox: string | undefined,
  spawn: RunAgentOptions['spawn'],
  egressSocket: string | undefined,
  checkAgents: readonly string[],
): Promise<number> {
  const raw = opt('agent-command', RUNNER_ENV.agentCommand);
  const agentCommand = raw === undefined ? undefined : parseAgentCommand(raw);
  if (raw !== undefined && agentCommand === undefined) {
    console.log(agentCommandProblem(raw));
    return 1;
  }
  if (sandbox !== undefined && sandbox !== 'bwrap') {
    console.log(`${RUNNER_ENV.sandbox} must be bwrap or unset, got "${sandbox}"`);
    return 1;
  }
  const agent = opt('agent', RUNNER_ENV.agent) ?? 'claude';
  if (!isAgentName(agent)) {
    console.log(agentNameProblem(agent));
    return 1;
  }
  const unreachable = (env[RUNNER_ENV.checkUnreachable] ?? '')
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t !== '');
  const agents: Array<{ agent: AgentName; command?: string[] }> = [];
  for (const value of checkAgents) {
    const eq = value.indexOf('=');
    const name = eq < 0 ? value : value.slice(0, eq);
    const command = eq < 0 ? undefined : parseAgentCommand(value.slice(eq + 1));
    if (!isAgentName(name)) {
      console.log(agentNameProblem(name));
      return 1;
    }
    if (eq >= 0 && command === undefined) {
      console.log(`--check-agent ${name}: ${agentCommandProblem(value.slice(eq + 1))}`);
      return 1;
    }
    agents.push({ agent: name, ...(command ? { command } : {}) });
  }
  const result = await checkRunner({
    env,
    cwd: opt('workdir', RUNNER_ENV.workdir) ?? process.cwd(),
    agentCommand,
    agent,
    agents,
    spawn,
    unreachable,
    egressSocket,
  });
  console.log(result.message);
  return result.ok ? 0 : 1;
}

interface Callback {
  callbackUrl: string;
  progressUrl: string | undefined;
  callbackToken: string;
  /** Through the run's egress gate, when it has one (Node's fetch ignores proxy variables). */
  fetch?: typeof fetch;
}

/** Where and how to report; null (after saying why) when the outcome cannot be reported at all. */
function callbackOf(opt: Lookup, secrets: RunnerSecrets, egressSocket: string | undefined): Callback | null {
  const callbackUrl = opt('callback-url', RUNNER_ENV.callbackUrl);
  const callbackToken = secrets.CALLBACK_TOKEN || undefined;
  if (!callbackUrl || !callbackToken || !isHttpUrl(callbackUrl)) {
    const problem = !callbackUrl
      ? 'CALLBACK_URL is not set (the full completion URL, e.g. http://baton:3000/api/runs/42/complete)'
      : !isHttpUrl(callbackUrl)
        ? `CALLBACK_URL must be an http(s) URL, got "${callbackUrl}"`
        : 'CALLBACK_TOKEN is not set (pass it in BATON_SECRETS_FILE or BATON_SECRETS_FD)';
    console.error(`baton agent: ${problem}; the outcome cannot be reported`);
    return null;
  }
  return {
    callbackUrl,
    progressUrl: opt('progress-url', RUNNER_ENV.progressUrl),
    callbackToken,
    ...(egressSocket ? { fetch: gatedFetch(egressSocket) } : {}),
  };
}

/** The one credential of the run's agent; the others stay with the runner. */
function agentSecretOf(agent: AgentName, secrets: RunnerSecrets): string | undefined {
  const name = agentAdapter(agent).credential?.secret;
  if (!name || name === 'CLAUDE_CODE_OAUTH_TOKEN') return undefined;
  return secrets[name as keyof RunnerSecrets] || undefined;
}

function failedCompletion(callback: Callback, maxRetryMs: number, summary: string, error: string): Promise<unknown> {
  const client = createCallbackClient({
    callbackUrl: callback.callbackUrl,
    progressUrl: callback.progressUrl,
    token: callback.callbackToken,
    fetch: callback.fetch,
    maxRetryMs,
    log: (line) => console.error(line),
  });
  return client.complete({ status: 'failed', exitCode: null, summary, usage: null, costUsd: null, durationMs: 0, error });
}

async function reportMisconfigured(callback: Callback, maxRetryMs: number, problems: string[]): Promise<number> {
  const summary = `the runner is misconfigured: ${problems.join('; ')}`;
  console.error(`baton agent: ${summary}`);
  await failedCompletion(callback, maxRetryMs, summary, 'runner_misconfigured');
  return 1;
}

/** Runs the agent with SIGTERM/SIGINT turned into an abort, and reports what stops it from starting. */
async function runWithSignals(
  callback: Callback,
  maxRetryMs: number,
  optionsFor: (signal: AbortSignal) => RunAgentOptions,
): Promise<number> {
  const controller = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => {
    if (controller.signal.aborted) {
      // A second signal means "now": give up on the callback rather than keep the workspace up.
      console.error(`baton agent: received ${signal} again; exiting without waiting for the completion callback`);
      process.exit(1);
    }
    console.error(`baton agent: received ${signal}; stopping the agent and reporting`);
    controller.abort();
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  try {
    const outcome = await runAgent(optionsFor(controller.signal));
    return outcome.status === 'succeeded' && outcome.callbackDelivered ? 0 : 1;
  } catch (err) {
    // runAgent reports everything that happens once it runs; this is for what stops it from
    // starting at all (an unwritable workdir, …), so the server still hears about the run.
    const summary = `the runner failed before the run could start: ${err instanceof Error ? err.message : String(err)}`;
    console.error(`baton agent: ${summary}`);
    await failedCompletion(callback, maxRetryMs, summary, 'runner_error');
    return 1;
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
  }
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}
