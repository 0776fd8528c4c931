import fs from 'node:fs';
import type { AgentLog } from './agent-log.js';
import { RunFailure } from './errors.js';
import { startProcess, type GroupProcess, type SpawnFunction } from './process-group.js';
import type { StopRequest } from './stop.js';
import { createStreamParser } from './stream-json.js';
import { FAILURE_KIND, type AgentStatus, type AgentUsage } from './types.js';

/** The default agent: Claude Code headless, permissions pre-approved (the workspace is the sandbox). */
export const CLAUDE_COMMAND: readonly string[] = [
  'claude',
  '-p',
  '--output-format',
  'stream-json',
  '--verbose',
  '--dangerously-skip-permissions',
  '{prompt}',
];

/** The parts of RunAgentOptions that shape the agent process. */
export interface AgentProcessOptions {
  agentCommand?: readonly string[];
  outputFormat?: 'stream-json' | 'text';
  tokenCap?: number;
  spawn?: SpawnFunction;
}

export interface AgentProcessResult {
  status: AgentStatus;
  exitCode: number | null;
  summary: string;
  usage: AgentUsage | null;
  costUsd: number | null;
  kind?: string;
}

/**
 * Runs the agent CLI to its end and turns its output into an outcome. Limits are the caller's:
 * the token cap is checked here as usage streams in, but stopping goes through `requestStop`
 * so that one place decides which reason wins.
 */
export async function runAgentProcess(input: {
  options: AgentProcessOptions;
  log: AgentLog;
  prompt: string;
  cwd: string;
  env: NodeJS.ProcessEnv;
  rawFile: string;
  onProcess: (proc: GroupProcess) => void;
  requestStop: (request: StopRequest) => void;
  reportUsage: (usage: AgentUsage) => void;
  graceMs: number;
}): Promise<AgentProcessResult> {
  const { options, log } = input;
  const template = options.agentCommand ?? CLAUDE_COMMAND;
  if (template.length === 0) throw new RunFailure('the agent command is empty');
  const argv = template.map((arg) => arg.split('{prompt}').join(input.prompt));
  const [command, ...args] = argv as [string, ...string[]];
  const format = options.outputFormat ?? 'stream-json';
  const parser = createStreamParser();
  const tokenCap = options.tokenCap ?? 0;
  const raw = fs.openSync(input.rawFile, 'a');
  const stderrTail: string[] = [];
  const outputTail: string[] = [];
  let lastTokens = 0;

  log.write(`[baton] starting agent: ${template[0]}`);
  const proc = startProcess(command, args, {
    cwd: input.cwd,
    env: input.env,
    spawn: options.spawn,
    onStdoutLine: (line) => {
      fs.writeSync(raw, `${log.mask(line)}\n`);
      if (format === 'text') {
        outputTail.push(line);
        if (outputTail.length > 40) outputTail.shift();
        log.write(line);
        return;
      }
      for (const out of parser.push(line)) log.write(out);
      const tokens = parser.streamedTokens;
      if (tokens !== lastTokens) {
        lastTokens = tokens;
        input.reportUsage(parser.streamedUsage);
        if (tokenCap > 0 && tokens > tokenCap) {
          input.requestStop({
            status: 'failed',
            kind: FAILURE_KIND.tokenCap,
            summary: `agent used ${tokens.toLocaleString('en-US')} tokens, over the token cap of ${tokenCap.toLocaleString('en-US')}; it was stopped`,
          });
        }
      }
    },
    onStderrLine: (line) => {
      stderrTail.push(line);
      if (stderrTail.length > 20) stderrTail.shift();
      log.write(`[stderr] ${line}`);
    },
  });
  input.onProcess(proc);
  const exit = await proc.exited;
  fs.closeSync(raw);
  // Whatever the agent left running in the background dies with the run.
  await proc.terminate(Math.min(input.graceMs, 2_000));
  log.write(`[baton] agent exited ${exit.signal ? `by signal ${exit.signal}` : `with code ${exit.code}`}`);

  const exitCode = exit.code;
  if (exit.error) {
    return {
      status: 'failed',
      exitCode: null,
      summary: `agent command "${command}" could not be started: ${exit.error.message}`,
      usage: null,
      costUsd: null,
      kind: FAILURE_KIND.agentNotStarted,
    };
  }
  if (format === 'text') {
    const text = outputTail
      .filter((l) => l.trim() !== '')
      .slice(-20)
      .join('\n');
    if (exitCode === 0)
      return { status: 'succeeded', exitCode, summary: text || 'agent finished with exit code 0', usage: null, costUsd: null };
    return {
      status: 'failed',
      exitCode,
      summary: `agent ${exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exitCode}`}${lastStderr(stderrTail) ? `: ${lastStderr(stderrTail)}` : ''}`,
      usage: null,
      costUsd: null,
      kind: FAILURE_KIND.agentError,
    };
  }

  const result = parser.result;
  const streamed = parser.streamedTokens > 0 ? parser.streamedUsage : null;
  const usage = result?.usage ?? streamed;
  const costUsd = result?.costUsd ?? null;
  if (!result) {
    const how = exit.signal ? `killed by ${exit.signal}` : `exit code ${exitCode}`;
    const err = lastStderr(stderrTail);
    return {
      status: 'failed',
      exitCode,
      summary: `agent output had no result message (${how})${err ? `; last stderr line: ${err}` : ''}${hintFor(stderrTail)}`,
      usage,
      costUsd,
      kind: FAILURE_KIND.noResult,
    };
  }
  if (result.subtype === 'success' && !result.isError) {
    return { status: 'succeeded', exitCode, summary: result.text?.trim() || '(the agent gave no final text)', usage, costUsd };
  }
  if (result.subtype === 'success') {
    const status = result.apiErrorStatus !== undefined ? ` (API status ${result.apiErrorStatus})` : '';
    return {
      status: 'failed',
      exitCode,
      summary: `agent reported an error${status}: ${result.text?.trim() || 'no error text'}`,
      usage,
      costUsd,
      kind: FAILURE_KIND.agentError,
    };
  }
  const turns = result.numTurns !== undefined ? ` after ${result.numTurns} turns` : '';
  return {
    status: 'failed',
    exitCode,
    summary: `agent stopped with ${result.subtype}${turns}${result.errors.length > 0 ? `: ${result.errors.join('; ')}` : ''}`,
    usage,
    costUsd,
    kind: FAILURE_KIND.agentError,
  };
}

/** Known startup failures of Claude Code, with what to do about them. */
function hintFor(stderr: string[]): string {
  if (stderr.some((l) => l.includes('cannot be used with root/sudo privileges'))) {
    return ' (Claude Code refuses --dangerously-skip-permissions as root: run the workspace as a non-root user, or set IS_SANDBOX=1 in its env if it is a disposable sandbox)';
  }
  return '';
}

function lastStderr(lines: string[]): string | undefined {
  return lines
    .filter((l) => l.trim() !== '')
    .at(-1)
    ?.trim();
}
