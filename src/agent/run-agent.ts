import fs from 'node:fs';
import path from 'node:path';
import { createAgentLog, type AgentLog } from './agent-log.js';
import { createCallbackClient, createProgressReporter } from './callback-client.js';
import { gitAuthEnv, prepareRepository, runSetupCommands, type StepResult, type StepRunner } from './checkout.js';
import { RunFailure, CheckoutError, CommandFileError, SetupCommandError } from './errors.js';
import { startLogServer, type LogServer } from './log-server.js';
import { runAgentProcess } from './agent-process.js';
import { openConversationTurn } from './conversation-turn.js';
import { agentAdapter, priceUsage, sessionFromFrontMatter, type AgentName, type AgentSession, type ModelPrice } from '../agents/index.js';
import { startProcess, type GroupProcess, type SpawnFunction } from './process-group.js';
import { promptArguments, resolvePrompt } from './prompt.js';
import type { SetupToken } from '../runner-contract/index.js';
import { isHeavyStage } from './stages.js';
import { Stopped, type StopRequest } from './stop.js';
import { FAILURE_KIND, MAX_PROMPT_CHARS, type AgentUsage, type CompletionBody, type RunnerResume } from '../runner-contract/index.js';
import type { AgentOutcome } from './types.js';

export const DEFAULT_MAX_DURATION_MS = 90 * 60_000;

/** Never inherited by a step: each gets the secrets it needs explicitly. */
const SECRET_ENV = [
  'ANTHROPIC_API_KEY',
  'OPENAI_API_KEY',
  'CODEX_API_KEY',
  'GEMINI_API_KEY',
  'GOOGLE_API_KEY',
  'GOOGLE_GENERATIVE_AI_API_KEY',
  'OPENCODE_API_KEY',
  'OPENROUTER_API_KEY',
  'CALLBACK_TOKEN',
  'GITEA_TOKEN',
  'CLAUDE_CODE_OAUTH_TOKEN',
  'BATON_SECRETS_FD',
  'BATON_SECRETS_FILE',
];

export interface RunAgentOptions {
  /** Stage name (`TASK_TYPE`): picks `.claude/commands/<stage>.md`. */
  stage: string;
  /** Issue or PR number (`ISSUE_NUMBER`); `$ARGUMENTS` for most stages. */
  issueNumber?: string;
  /** `DEPLOY_ENV`; `$ARGUMENTS` for the devops stage. */
  deployEnv?: string;
  /** `REPO_CLONE_URL`; may be omitted when `workdir` already is a checkout. */
  cloneUrl?: string;
  /** Directory name of the clone inside `workdir` (`GITEA_REPO`). @default derived from cloneUrl */
  repoName?: string;
  /** Where the repository is cloned and `.baton/agent.log` is written (`BATON_WORKDIR`). */
  workdir: string;
  /** Working branch; the remote's default branch is used when it does not exist. @default 'develop' */
  branch?: string;
  /** What `$ARGUMENTS` stands for in the prompt (`BATON_ARGUMENTS`). @default the issue number (the deploy environment for devops) */
  arguments?: string;
  /** Full completion URL (`CALLBACK_URL`). */
  callbackUrl: string;
  /** @default callbackUrl with `/complete` replaced by `/progress` */
  progressUrl?: string;
  callbackToken: string;
  /**
   * Base env of every step. `ANTHROPIC_API_KEY`, `CALLBACK_TOKEN`, `GITEA_TOKEN` and
   * `CLAUDE_CODE_OAUTH_TOKEN` are always removed: each step gets only the secrets it needs.
   */
  env: NodeJS.ProcessEnv;
  /** Put into the agent's env as `CLAUDE_CODE_OAUTH_TOKEN` (when the agent is Claude Code). */
  claudeOauthToken?: string;
  /**
   * Which agent runs the stage (`BATON_AGENT`): its adapter builds the argv and reads the stream.
   * `text` is the same as outputFormat `text`.
   * @default 'claude'
   */
  agent?: AgentName;
  /** The stage's model (`BATON_AGENT_MODEL`); wins over a command file's `model`. @default the CLI's default */
  model?: string;
  /**
   * The agent's credential (the runner secret its adapter names: CODEX_API_KEY, GEMINI_API_KEY,
   * OPENCODE_API_KEY); the adapter turns it into the variables its CLI reads. Claude Code's is
   * `claudeOauthToken`.
   */
  agentSecret?: string;
  /**
   * What the agent's tokens cost (USD per million), for a CLI that reports no cost
   * (`BATON_AGENT_PRICE`); the completion then carries the computed cost, `costSource: computed`.
   */
  agentPrice?: ModelPrice;
  /**
   * Forge token of the stage's bot: git credentials for http(s) clone URLs (git steps and the
   * agent) and `GITEA_TOKEN` of the agent; masked in logs.
   */
  forgeToken?: string;
  /**
   * Which tokens the install and build commands get. They run the repository's code, so by
   * default none: `forge` adds `GITEA_TOKEN` and git credentials, `agent` adds `CLAUDE_CODE_OAUTH_TOKEN`.
   * @default []
   */
  setupTokens?: readonly SetupToken[];
  /**
   * The agent CLI. With `stream-json` output it names the Claude Code executable only, and the
   * runner adds `-p --output-format stream-json --verbose`, the permission flags, `--model` and
   * `-- <prompt>` (or the prompt on stdin when it is over 100 KiB). With `text` output it is the
   * whole argv: each `{prompt}` is replaced by the prompt, and without `{prompt}` the prompt
   * goes to stdin.
   * @default CLAUDE_COMMAND (`['claude']`)
   * @example ['npx', '--no-install', 'claude']
   * @example ['aider', '--yes-always', '--message', '{prompt}'] (with outputFormat 'text')
   */
  agentCommand?: readonly string[];
  /**
   * `stream-json`: Claude Code NDJSON, the last `result` decides. `text`: any other CLI; exit code
   * 0 is success and the last output lines are the summary.
   * @default 'stream-json'
   */
  outputFormat?: 'stream-json' | 'text';
  /**
   * Whether Claude Code runs with `--dangerously-skip-permissions` when the stage's command file
   * has no `allowed-tools` (with `allowed-tools` it gets `--allowedTools` and never skips).
   * The server sends the stage's setting (`BATON_STAGE_SKIP_PERMISSIONS`).
   * @default true
   */
  skipPermissions?: boolean;
  /** Whether the stage builds code (runs the install and build commands first). @default the built-in table's answer */
  heavy?: boolean;
  /** Shell command run before the agent on heavy stages. @example 'npm ci' */
  installCommand?: string;
  /** Shell command run after install on heavy stages. @example 'npm run build' */
  buildCommand?: string;
  /** Whole run, clone included. @default DEFAULT_MAX_DURATION_MS (90 min) */
  maxDurationMs?: number;
  /**
   * Stop the agent once its assistant messages used more tokens than this (input + output +
   * cache read + cache creation, summed over API responses). 0 = no cap.
   * @default 0
   */
  tokenCap?: number;
  /** Time between SIGTERM and SIGKILL of the agent's process group. @default 10_000 */
  killGraceMs?: number;
  /** Live log over HTTP; `false` disables it. Port 0 picks a free port. @default false */
  logServer?: false | { port: number; host?: string };
  onLogServerListening?: (url: string) => void;
  /** Every (masked) log line, e.g. to echo on stdout. */
  onLogLine?: (line: string) => void;
  /** Longest time spent retrying the completion callback. @default 900_000 */
  callbackMaxRetryMs?: number;
  /** @default 1_000 */
  callbackRetryBaseMs?: number;
  /** @default 1_000 */
  progressIntervalMs?: number;
  /**
   * A conversation's next turn (`BATON_RESUME_*`): the session is restored from the transcript
   * the server kept and resumed with the reply as the prompt, on the branch it worked on.
   */
  resume?: RunnerResume;
  /** Aborting it stops the run as "runner terminated" (the CLI aborts on SIGTERM). */
  signal?: AbortSignal;
  /** Where the built-in stage prompts live. @default the package's assets/ */
  assetsDir?: string;
  spawn?: SpawnFunction;
  fetch?: typeof fetch;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

/**
 * Runs one stage in this workspace and reports the outcome to the server. Whatever happens
 * (clone failure, broken command file, agent crash, limits, SIGTERM) the completion callback is
 * attempted exactly once (with retries); the returned outcome says whether it arrived.
 */
export async function runAgent(options: RunAgentOptions): Promise<AgentOutcome> {
  const now = options.now ?? Date.now;
  const started = now();
  const workdir = path.resolve(options.workdir);
  const stateDir = path.join(workdir, '.baton');
  fs.mkdirSync(stateDir, { recursive: true });
  const gitEnv = gitAuthEnv(options.cloneUrl, options.forgeToken);
  const log = createAgentLog({
    file: path.join(stateDir, 'agent.log'),
    // The git header carries the forge token in base64, which plain masking of the token misses.
    secrets: [
      options.callbackToken,
      options.forgeToken,
      options.claudeOauthToken,
      options.agentSecret,
      options.env.ANTHROPIC_API_KEY,
      gitEnv.GIT_CONFIG_VALUE_0,
    ],
    now,
  });
  const client = createCallbackClient({
    callbackUrl: options.callbackUrl,
    progressUrl: options.progressUrl,
    token: options.callbackToken,
    fetch: options.fetch,
    sleep: options.sleep,
    now,
    maxRetryMs: options.callbackMaxRetryMs,
    retryBaseMs: options.callbackRetryBaseMs,
    // Delivery problems go to the local file only: sending them as progress would loop.
    log: (line) => localOnly(log, line),
    // The result outlives the runner even when no server took it: a file next to the log, which
    // the workspace keeps until its teardown (the summary in it is masked like the log).
    onUndelivered: (record) => {
      try {
        fs.writeFileSync(path.join(stateDir, UNDELIVERED_FILE), `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600 });
      } catch (err) {
        localOnly(log, `[baton] could not keep the undelivered result: ${err instanceof Error ? err.message : String(err)}`);
      }
    },
  });
  const reporter = createProgressReporter({ send: (body) => client.progress(body), intervalMs: options.progressIntervalMs });
  log.onLine((line) => {
    if (!line.startsWith(LOCAL_PREFIX)) reporter.add(line);
  });
  if (options.onLogLine) log.onLine(options.onLogLine);

  let logServer: LogServer | null = null;
  if (options.logServer) {
    try {
      logServer = await startLogServer({
        file: log.file,
        port: options.logServer.port,
        host: options.logServer.host,
        title: `baton ${options.stage} #${options.issueNumber ?? ''}`,
        flush: () => log.flush(),
      });
      log.write(`[baton] live log at ${logServer.url}/`);
      options.onLogServerListening?.(logServer.url);
    } catch (err) {
      log.write(`[baton] live log server could not start on port ${options.logServer.port}: ${(err as Error).message}`);
    }
  }

  const graceMs = options.killGraceMs ?? 10_000;
  const maxDurationMs = options.maxDurationMs ?? DEFAULT_MAX_DURATION_MS;
  let phase = 'setup';
  let current: GroupProcess | null = null;
  let stop: StopRequest | null = null;
  const requestStop = (request: StopRequest) => {
    if (stop) return;
    stop = request;
    log.write(`[baton] stopping: ${request.summary}`);
    void current?.terminate(graceMs);
  };
  const deadline = setTimeout(() => {
    const limit = formatDuration(maxDurationMs);
    requestStop({
      status: 'timed_out',
      kind: FAILURE_KIND.maxDuration,
      summary:
        phase === 'agent' ? `agent exceeded the ${limit} maximum duration` : `run exceeded the ${limit} maximum duration during ${phase}`,
    });
  }, maxDurationMs);
  const onAbort = () =>
    requestStop({
      status: 'failed',
      kind: FAILURE_KIND.runnerTerminated,
      summary: `the runner was terminated (SIGTERM, e.g. the workspace was stopped) during ${phase === 'agent' ? 'the agent run' : phase}; the agent was stopped`,
    });
  if (options.signal?.aborted) onAbort();
  else options.signal?.addEventListener('abort', onAbort, { once: true });

  // The agent must not be able to report the run's outcome itself (no CALLBACK_TOKEN), and the
  // repository's install and build scripts get no token the stage did not grant them.
  const secretFreeEnv = (): NodeJS.ProcessEnv => {
    const env = { ...options.env };
    for (const name of SECRET_ENV) delete env[name];
    return env;
  };
  const agentName: AgentName = options.outputFormat === 'text' ? 'text' : (options.agent ?? 'claude');
  const adapter = agentAdapter(agentName);
  const agentSecret = agentName === 'claude' ? options.claudeOauthToken : options.agentSecret;
  // Only this agent's credential, in the variables its CLI reads: another agent's never reaches it.
  const credentialEnv = (session: AgentSession) => adapter.credentialEnv(agentSecret, session);
  const setupTokens = options.setupTokens ?? [];
  const setupEnv: NodeJS.ProcessEnv = {
    ...(setupTokens.includes('forge') ? { ...gitEnv, ...(options.forgeToken ? { GITEA_TOKEN: options.forgeToken } : {}) } : {}),
    ...(setupTokens.includes('agent')
      ? credentialEnv({ allowedTools: null, model: options.model ?? null, skipPermissions: options.skipPermissions ?? true })
      : {}),
  };

  const exec: StepRunner = async (label, command, args, stepOptions) => {
    if (stop) throw new Stopped(stop);
    phase = label;
    const tail: string[] = [];
    const keep = (line: string) => {
      tail.push(log.mask(line));
      if (tail.length > 20) tail.shift();
    };
    const proc = startProcess(command, args, {
      cwd: stepOptions.cwd,
      env: { ...secretFreeEnv(), ...stepOptions.env },
      spawn: options.spawn,
      onStdoutLine: (line) => {
        keep(line);
        log.write(`[${label}] ${line}`);
      },
      onStderrLine: (line) => {
        keep(line);
        log.write(`[${label}] ${line}`);
      },
    });
    current = proc;
    if (stop) void proc.terminate(graceMs);
    const exit = await proc.exited;
    current = null;
    if (stop) throw new Stopped(stop);
    return { ...exit, tail } satisfies StepResult;
  };

  let body: CompletionBody;
  let exitCode: number | null = null;
  let usage: AgentUsage | null = null;
  let costUsd: number | null = null;
  try {
    log.write(
      `[baton] run ${options.env.BATON_RUN_ID ?? ''} stage ${options.stage}${options.issueNumber ? ` #${options.issueNumber}` : ''}`.replace(
        /\s+/g,
        ' ',
      ),
    );
    const conversation = await openConversationTurn({
      adapter,
      stateDir,
      home: options.env.HOME,
      log,
      resume: options.resume,
      branch: options.branch,
      callbackUrl: options.callbackUrl,
      token: options.callbackToken,
      fetch: options.fetch,
      sleep: options.sleep,
    });
    const repoDir = await prepareRepository({
      exec,
      workdir,
      cloneUrl: options.cloneUrl,
      repoName: options.repoName,
      branch: conversation.branch,
      gitEnv,
      log: (line) => log.write(line),
    });
    if (repoDir === workdir) excludeStateDir(repoDir);
    conversation.restore(repoDir);
    if (options.heavy ?? isHeavyStage(options.stage)) {
      const commands = [
        options.installCommand ? { label: 'install command', command: options.installCommand } : null,
        options.buildCommand ? { label: 'build command', command: options.buildCommand } : null,
      ].filter((c): c is { label: string; command: string } => c !== null);
      await runSetupCommands(exec, repoDir, commands, (line) => log.write(line), setupEnv);
    }
    if (stop) throw new Stopped(stop);
    phase = 'prompt';
    const promptArgs = options.arguments ?? promptArguments(options.stage, options.issueNumber, options.deployEnv);
    const resolved = await resolvePrompt({
      repoDir,
      stage: options.stage,
      args: promptArgs,
      assetsDir: options.assetsDir,
    });
    const promptFile =
      resolved.source === 'repository' ? `.claude/commands/${options.stage}.md` : `baton's built-in ${options.stage} template`;
    log.write(`[baton] prompt from ${promptFile} (${resolved.prompt.length} characters)`);
    // allowed-tools are Claude Code's rules; a command file's model names a Claude model. The
    // stage's configured model wins over the file (the file comes from the repository).
    const fromFile =
      agentName === 'claude' ? sessionFromFrontMatter(resolved.frontMatter, promptFile) : { allowedTools: null, model: null };
    const session: AgentSession = {
      allowedTools: fromFile.allowedTools,
      model: agentName === 'text' ? null : (options.model ?? fromFile.model),
      skipPermissions: options.skipPermissions ?? true,
    };
    // The run page shows what the agent was asked; masked like every line that leaves the workspace.
    reporter.setPrompt({
      text: log.mask(resolved.prompt).slice(0, MAX_PROMPT_CHARS + 1),
      arguments: log.mask(promptArgs),
      source: resolved.source,
      file: promptFile,
      model: session.model,
    });

    phase = 'agent';
    const rawFile = path.join(stateDir, 'agent.ndjson');
    const agentStarted = now();
    const agent = await runAgentProcess({
      options,
      session,
      log,
      prompt: conversation.resume?.prompt ?? resolved.prompt,
      resumeSessionId: conversation.resume?.sessionId,
      cwd: repoDir,
      env: {
        ...secretFreeEnv(),
        ...gitEnv,
        ...(options.forgeToken ? { GITEA_TOKEN: options.forgeToken } : {}),
        ...credentialEnv(session),
        ...conversation.agentEnv(options.env.PATH),
      },
      rawFile,
      onProcess: (proc) => {
        current = proc;
        if (stop) void proc.terminate(graceMs);
      },
      requestStop,
      reportUsage: (u) => reporter.setUsage(u),
      graceMs,
    });
    current = null;
    exitCode = agent.exitCode;
    usage = agent.usage;
    costUsd = agent.costUsd;
    if (stop) throw new Stopped(stop);
    phase = 'question';
    // An agent that asked ends its turn: the run waits for a reply instead of ending. A turn
    // that failed without a result (a crash) cannot be resumed and ends as it did.
    const question = await conversation.close({
      exec,
      cwd: repoDir,
      gitEnv,
      prompt: resolved.prompt,
      sessionId: agent.sessionId ?? null,
      streamFile: rawFile,
      canAsk: agent.kind !== FAILURE_KIND.noResult && agent.kind !== FAILURE_KIND.agentNotStarted,
      usage,
      // A CLI that reports no cost is priced from its tokens, as the completion is (below).
      costUsd: costUsd ?? (usage && options.agentPrice ? priceUsage(usage, options.agentPrice) : null),
      startedAt: agentStarted,
    });
    if (stop) throw new Stopped(stop);
    body = question
      ? { status: 'succeeded', exitCode, summary: agent.summary, usage, costUsd, durationMs: 0, question }
      : {
          status: agent.status,
          exitCode,
          summary: agent.summary,
          usage,
          costUsd,
          durationMs: 0,
          ...(agent.kind ? { error: agent.kind } : {}),
        };
  } catch (err) {
    const failure = describeFailure(err, () => stop);
    body = { status: failure.status, exitCode, summary: failure.summary, usage, costUsd, durationMs: 0, error: failure.kind };
  } finally {
    clearTimeout(deadline);
    options.signal?.removeEventListener('abort', onAbort);
  }

  // A CLI that reports no cost (Codex, Gemini) is priced from its tokens, so budgets and charts
  // treat every agent alike; the body says which it is.
  if (body.costUsd !== null) body.costSource = 'reported';
  else if (body.usage && options.agentPrice) {
    body.costUsd = priceUsage(body.usage, options.agentPrice);
    body.costSource = 'computed';
    costUsd = body.costUsd;
    log.write(`[baton] cost computed from the tokens at the run's price: $${body.costUsd.toFixed(4)}`);
  }
  body.durationMs = now() - started;
  body.summary = truncate(log.mask(body.summary), 32_000);
  log.write(`[baton] outcome: ${body.status}: ${firstLine(body.summary)}`);
  // How much memory the runner needed at its peak: output of any size must not change it much.
  log.write(`[baton] runner peak memory (RSS): ${Math.round(process.resourceUsage().maxRSS / 1024)} MiB`);
  if (usage || costUsd !== null)
    reporter.setUsage(
      usage ?? { inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 },
      costUsd ?? undefined,
    );
  await reporter.close();
  const delivery = await client.complete(body);
  await logServer?.close();
  log.close();
  return { ...body, callbackDelivered: delivery.delivered, logFile: log.file };
}

function describeFailure(err: unknown, stop: () => StopRequest | null): StopRequest {
  if (err instanceof Stopped) return err.request;
  const pending = stop();
  if (pending) return pending;
  if (err instanceof CheckoutError) {
    return { status: 'failed', kind: err.transient ? FAILURE_KIND.cloneUnavailable : FAILURE_KIND.cloneFailed, summary: err.message };
  }
  if (err instanceof CommandFileError) return { status: 'failed', kind: FAILURE_KIND.commandFileInvalid, summary: err.message };
  if (err instanceof SetupCommandError) {
    return { status: 'failed', kind: err.transient ? FAILURE_KIND.setupUnavailable : FAILURE_KIND.setupFailed, summary: err.message };
  }
  if (err instanceof RunFailure) return { status: 'failed', kind: FAILURE_KIND.runnerError, summary: err.message };
  return {
    status: 'failed',
    kind: FAILURE_KIND.runnerError,
    summary: `the runner failed unexpectedly: ${err instanceof Error ? err.message : String(err)}`,
  };
}

const LOCAL_PREFIX = '[baton:local] ';

/** In `.baton/` of the workdir: the completion a runner could not deliver (callback-client.ts). */
export const UNDELIVERED_FILE = 'undelivered-completion.json';

function localOnly(log: AgentLog, line: string) {
  log.write(`${LOCAL_PREFIX}${line.replace(/^\[baton\] /, '')}`);
}

/** Keeps `.baton/` out of `git status` (and out of the agent's commits) when the workdir is the repo. */
function excludeStateDir(repoDir: string) {
  const exclude = path.join(repoDir, '.git', 'info', 'exclude');
  try {
    const current = fs.existsSync(exclude) ? fs.readFileSync(exclude, 'utf8') : '';
    if (!current.split('\n').includes('/.baton/')) {
      fs.mkdirSync(path.dirname(exclude), { recursive: true });
      fs.appendFileSync(exclude, `${current.endsWith('\n') || current === '' ? '' : '\n'}/.baton/\n`);
    }
  } catch {
    // Cosmetic only.
  }
}

export function formatDuration(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  if (ms >= 60_000) return `${(ms / 60_000).toFixed(1)} min`;
  return `${Math.round(ms / 100) / 10} s`;
}

function firstLine(text: string): string {
  const line = text.split('\n')[0] ?? '';
  return line.length > 200 ? `${line.slice(0, 200)}…` : line;
}

function truncate(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}\n… (truncated, see the full log)` : text;
}
