import fs from 'node:fs';
import path from 'node:path';
import { countCost, sessionFromFrontMatter, type AgentSession } from '../agents/index.js';
import { FAILURE_KIND, MAX_PROMPT_CHARS, RUNNER_ENV, type AgentUsage, type CompletionBody } from '../runner-contract/index.js';
import { createAgentLog, type AgentLog } from './agent-log.js';
import { runAgentProcess, type AgentProcessResult } from './agent-process.js';
import { createCallbackClient, createProgressReporter, type CallbackClient, type ProgressReporter } from './callback-client.js';
import { forgeEnv } from './forge-env.js';
import { gitAuthEnv, prepareRepository, runSetupCommands } from './checkout.js';
import { openConversationTurn, type ConversationTurn } from './conversation-turn.js';
import { CheckoutError, CommandFileError, RunFailure, SetupCommandError } from './errors.js';
import { startLogServer, type LogServer } from './log-server.js';
import { promptArguments, resolvePrompt, type ResolvedPrompt } from './prompt.js';
import type { RunAgentOptions } from './run-agent-options.js';
import { createRunControl, type RunControl } from './run-control.js';
import { isHeavyStage } from './stages.js';
import { stepEnvironments, type StepEnvironments } from './step-env.js';
import { Stopped, type StopRequest } from './stop.js';
import type { AgentOutcome } from './types.js';

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
  const { log, client, reporter } = openReporting(options, stateDir, gitEnv, now);
  const logServer = await startLiveLog(options, log);
  const envs = stepEnvironments(options, gitEnv);
  const control = createRunControl(options, log, envs.secretFree);
  const spent: Spent = { exitCode: null, usage: null, costUsd: null };
  let body: CompletionBody;
  try {
    body = await runStage({ options, workdir, stateDir, gitEnv, log, reporter, envs, control, spent, now });
  } catch (err) {
    const failure = describeFailure(err, () => control.stop);
    const { exitCode, usage, costUsd } = spent;
    body = { status: failure.status, exitCode, summary: failure.summary, usage, costUsd, durationMs: 0, error: failure.kind };
  } finally {
    control.dispose();
  }
  completeBody(body, options, log, spent, () => now() - started);
  if (spent.usage || spent.costUsd !== null)
    reporter.setUsage(
      spent.usage ?? { inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 },
      spent.costUsd ?? undefined,
    );
  await reporter.close();
  const delivery = await client.complete(body);
  await logServer?.close();
  log.close();
  return { ...body, callbackDelivered: delivery.delivered, logFile: log.file };
}

/** What the agent ran up, kept for the completion however the run ends. */
interface Spent {
  exitCode: number | null;
  usage: AgentUsage | null;
  costUsd: number | null;
}

/** Everything a stage's steps share. */
interface StageRun {
  options: RunAgentOptions;
  workdir: string;
  stateDir: string;
  gitEnv: NodeJS.ProcessEnv;
  log: AgentLog;
  reporter: ProgressReporter;
  envs: StepEnvironments;
  control: RunControl;
  spent: Spent;
  now: () => number;
}

/** The run's masked log, the callback client that reports from it, and the progress reporter it feeds. */
function openReporting(
  options: RunAgentOptions,
  stateDir: string,
  gitEnv: NodeJS.ProcessEnv,
  now: () => number,
): { log: AgentLog; client: CallbackClient; reporter: ProgressReporter } {
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
  return { log, client, reporter };
}

/** The live log over HTTP, when asked for; a port that cannot be had is said in the log, not fatal. */
async function startLiveLog(options: RunAgentOptions, log: AgentLog): Promise<LogServer | null> {
  if (!options.logServer) return null;
  try {
    const logServer = await startLogServer({
      file: log.file,
      port: options.logServer.port,
      host: options.logServer.host,
      title: `baton ${options.stage} #${options.issueNumber ?? ''}`,
      flush: () => log.flush(),
    });
    log.write(`[baton] live log at ${logServer.url}/`);
    options.onLogServerListening?.(logServer.url);
    return logServer;
  } catch (err) {
    log.write(`[baton] live log server could not start on port ${options.logServer.port}: ${(err as Error).message}`);
    return null;
  }
}

/** The stage from checkout to the agent's last word: the completion body of a run that was not stopped. */
async function runStage(run: StageRun): Promise<CompletionBody> {
  const { options, log, control, spent } = run;
  log.write(
    `[baton] run ${options.env.BATON_RUN_ID ?? ''} stage ${options.stage}${options.issueNumber ? ` #${options.issueNumber}` : ''}`.replace(
      /\s+/g,
      ' ',
    ),
  );
  const conversation = await openConversationTurn({
    adapter: run.envs.adapter,
    stateDir: run.stateDir,
    home: options.env.HOME,
    log,
    resume: options.resume,
    branch: options.branch,
    callbackUrl: options.callbackUrl,
    token: options.callbackToken,
    fetch: options.fetch,
    sleep: options.sleep,
  });
  const repoDir = await checkout(run, conversation);
  control.throwIfStopped();
  control.phase = 'prompt';
  const { resolved, session } = await preparePrompt(run, repoDir);
  control.phase = 'agent';
  const rawFile = path.join(run.stateDir, 'agent.ndjson');
  const agentStarted = run.now();
  const agent = await runTheAgent(run, { repoDir, session, rawFile, conversation, prompt: resolved.prompt });
  control.throwIfStopped();
  control.phase = 'question';
  // An agent that asked ends its turn: the run waits for a reply instead of ending. A turn
  // that failed without a result (a crash) cannot be resumed and ends as it did.
  const question = await conversation.close({
    exec: control.exec,
    cwd: repoDir,
    gitEnv: run.gitEnv,
    prompt: resolved.prompt,
    sessionId: agent.sessionId ?? null,
    streamFile: rawFile,
    canAsk: agent.kind !== FAILURE_KIND.noResult && agent.kind !== FAILURE_KIND.agentNotStarted,
    usage: spent.usage,
    // The cost the completion counts (completeBody): priced from the tokens, or the reported one checked.
    costUsd: countCost(spent.usage, spent.costUsd, options.agentPrice).costUsd,
    startedAt: agentStarted,
  });
  control.throwIfStopped();
  const { exitCode, usage, costUsd } = spent;
  return question
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
}

/** The repository on the turn's branch, with the turn's session restored and, on heavy stages, installed and built. */
async function checkout(run: StageRun, conversation: ConversationTurn): Promise<string> {
  const { options, log, control, workdir } = run;
  const repoDir = await prepareRepository({
    exec: control.exec,
    workdir,
    cloneUrl: options.cloneUrl,
    repoName: options.repoName,
    branch: conversation.branch,
    gitEnv: run.gitEnv,
    log: (line) => log.write(line),
  });
  if (repoDir === workdir) excludeStateDir(repoDir);
  conversation.restore(repoDir);
  if (options.heavy ?? isHeavyStage(options.stage)) {
    const commands = [
      options.installCommand ? { label: 'install command', command: options.installCommand } : null,
      options.buildCommand ? { label: 'build command', command: options.buildCommand } : null,
    ].filter((c): c is { label: string; command: string } => c !== null);
    await runSetupCommands(control.exec, repoDir, commands, (line) => log.write(line), run.envs.setup);
  }
  return repoDir;
}

/** The stage's prompt and the agent session it asks for; the run page is told what the agent is asked. */
async function preparePrompt(run: StageRun, repoDir: string): Promise<{ resolved: ResolvedPrompt; session: AgentSession }> {
  const { options, log } = run;
  const promptArgs = options.arguments ?? promptArguments(options.stage, options.issueNumber, options.deployEnv);
  const resolved = await resolvePrompt({
    repoDir,
    stage: options.stage,
    args: promptArgs,
    forge: options.env[RUNNER_ENV.forge],
    assetsDir: options.assetsDir,
  });
  const promptFile =
    resolved.source === 'repository' ? `.claude/commands/${options.stage}.md` : `baton's built-in ${options.stage} template`;
  log.write(`[baton] prompt from ${promptFile} (${resolved.prompt.length} characters)`);
  // allowed-tools are Claude Code's rules; a command file's model names a Claude model. The
  // stage's configured model wins over the file (the file comes from the repository).
  const agentName = run.envs.agentName;
  const fromFile = agentName === 'claude' ? sessionFromFrontMatter(resolved.frontMatter, promptFile) : { allowedTools: null, model: null };
  const session: AgentSession = {
    allowedTools: fromFile.allowedTools,
    model: agentName === 'text' ? null : (options.model ?? fromFile.model),
    skipPermissions: options.skipPermissions ?? true,
    // `baton mcp` beside `baton ask` (conversation.ts puts `baton` on the agent's PATH).
    canAsk: agentName === 'claude',
  };
  // The run page shows what the agent was asked; masked like every line that leaves the workspace.
  run.reporter.setPrompt({
    text: log.mask(resolved.prompt).slice(0, MAX_PROMPT_CHARS + 1),
    arguments: log.mask(promptArgs),
    source: resolved.source,
    file: promptFile,
    model: session.model,
  });
  return { resolved, session };
}

/** The agent CLI, to its end (or the stop), with its own credential and none of the runner's. */
async function runTheAgent(
  run: StageRun,
  turn: { repoDir: string; session: AgentSession; rawFile: string; conversation: ConversationTurn; prompt: string },
): Promise<AgentProcessResult> {
  const { options, control, envs } = run;
  const { conversation, session } = turn;
  const agent = await runAgentProcess({
    options,
    session,
    log: run.log,
    prompt: conversation.resume?.prompt ?? turn.prompt,
    resumeSessionId: conversation.resume?.sessionId,
    cwd: turn.repoDir,
    env: {
      ...envs.secretFree(),
      ...run.gitEnv,
      ...forgeEnv(options.env, options.forgeToken),
      ...envs.credential(session),
      ...conversation.agentEnv(options.env.PATH),
    },
    rawFile: turn.rawFile,
    onProcess: (proc) => control.attach(proc),
    requestStop: (request) => control.requestStop(request),
    reportUsage: (u) => run.reporter.setUsage(u),
    graceMs: options.killGraceMs ?? 10_000,
  });
  control.attach(null);
  run.spent.exitCode = agent.exitCode;
  run.spent.usage = agent.usage;
  run.spent.costUsd = agent.costUsd;
  return agent;
}

/**
 * The body's last words: the cost it counts (a CLI that reports no cost, Codex or Gemini, priced
 * from its tokens, so budgets and charts treat every agent alike; a reported one checked against
 * the price of its tokens, `countCost`), and which it is; the duration; the summary masked and cut.
 */
function completeBody(body: CompletionBody, options: RunAgentOptions, log: AgentLog, spent: Spent, elapsed: () => number): void {
  const counted = countCost(body.usage, body.costUsd, options.agentPrice);
  if (counted.refused) log.write(counted.refused);
  if (counted.source === 'computed') {
    body.costUsd = counted.costUsd;
    spent.costUsd = counted.costUsd;
    log.write(`[baton] cost computed from the tokens at the run's price: $${counted.costUsd!.toFixed(4)}`);
  }
  if (counted.source) body.costSource = counted.source;
  body.durationMs = elapsed();
  body.summary = truncate(log.mask(body.summary), 32_000);
  log.write(`[baton] outcome: ${body.status}: ${firstLine(body.summary)}`);
  // How much memory the runner needed at its peak: output of any size must not change it much.
  log.write(`[baton] runner peak memory (RSS): ${Math.round(process.resourceUsage().maxRSS / 1024)} MiB`);
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

function firstLine(text: string): string {
  const line = text.split('\n')[0] ?? '';
  return line.length > 200 ? `${line.slice(0, 200)}…` : line;
}

function truncate(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}\n… (truncated, see the full log)` : text;
}
