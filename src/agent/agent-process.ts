import fs from 'node:fs';
import type { AgentLog } from './agent-log.js';
import { agentAdapter, RunFailure, type AgentInvocation, type AgentName, type AgentSession, type AgentStream } from '../agents/index.js';
import { startProcess, type GroupProcess, type ProcessExit, type SpawnFunction } from './process-group.js';
import type { StopRequest } from './stop.js';
import { FAILURE_KIND, type AgentStatus, type AgentUsage } from '../runner-contract/index.js';

/** The parts of RunAgentOptions that shape the agent process. */
export interface AgentProcessOptions {
  agentCommand?: readonly string[];
  outputFormat?: 'stream-json' | 'text';
  /** Which adapter reads the agent; `text` (or outputFormat text) is any CLI. @default 'claude' */
  agent?: AgentName;
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
  /** The session the CLI announced (for a resume), and the model it said it used. */
  sessionId?: string | null;
  model?: string | null;
}

/**
 * Longest stdout line kept whole. A stream-json line is one message; the largest real ones (a
 * tool result, a file the model writes) stay far below this. Beyond it the line cannot be parsed
 * anyway, and holding it would let one endless line fill the runner's memory.
 */
const MAX_STREAM_LINE = 4 * 1024 * 1024;
/** Longest line of a text-output agent or of stderr kept whole. */
const MAX_TEXT_LINE = 64 * 1024;
/** Lines kept for summaries and error messages are cut to this. */
const MAX_TAIL_LINE = 2_000;

/**
 * Runs the agent CLI to its end and turns its output into an outcome. Limits are the caller's:
 * the token cap is checked here as usage streams in, but stopping goes through `requestStop`
 * so that one place decides which reason wins.
 *
 * Output is handled as it arrives, in time linear in its size and in bounded memory: the raw
 * stream goes to `rawFile` (secrets masked), each line is parsed once, and only short tails are
 * kept for the summary. The agent is never slowed by its reader beyond the cost of a line.
 */
/** What runAgentProcess runs, and how it tells its caller about the run. */
export interface AgentProcessInput {
  options: AgentProcessOptions;
  session: AgentSession;
  log: AgentLog;
  prompt: string;
  /** Continue this session (a conversation's next turn) with `prompt` as the reply. */
  resumeSessionId?: string | null;
  cwd: string;
  env: NodeJS.ProcessEnv;
  rawFile: string;
  onProcess: (proc: GroupProcess) => void;
  requestStop: (request: StopRequest) => void;
  reportUsage: (usage: AgentUsage) => void;
  graceMs: number;
}

export async function runAgentProcess(input: AgentProcessInput): Promise<AgentProcessResult> {
  const { options, log } = input;
  const { invocation, format, parser } = prepareInvocation(input);
  const raw = openRawStream(input.rawFile, log);
  const output = createOutputReader(input, format, parser);
  log.write(`[baton] starting agent: ${describeInvocation(invocation, format)}`);
  const proc = startProcess(invocation.command, invocation.args, {
    cwd: input.cwd,
    env: input.env,
    stdin: invocation.stdin,
    spawn: options.spawn,
    maxLineLength: format === 'stream-json' ? MAX_STREAM_LINE : MAX_TEXT_LINE,
    onStdoutChunk: (text) => raw.push(text),
    onStdoutLine: (line, cut) => output.stdoutLine(line, cut),
    onStderrLine: (line) => output.stderrLine(line),
  });
  input.onProcess(proc);
  const exit = await proc.exited;
  raw.end();
  // Whatever the agent left running in the background dies with the run.
  await proc.terminate(Math.min(input.graceMs, 2_000));
  log.write(`[baton] agent exited ${exit.signal ? `by signal ${exit.signal}` : `with code ${exit.code}`}`);
  if (exit.error) {
    return {
      status: 'failed',
      exitCode: null,
      summary: `agent command "${invocation.command}" could not be started: ${exit.error.message}`,
      usage: null,
      costUsd: null,
      kind: FAILURE_KIND.agentNotStarted,
    };
  }
  return format === 'text' ? textOutcome(exit, output) : streamOutcome(exit, parser, output);
}

/** The adapter's command line for this turn (a new session, or a resumed one) and the parser of its stream. */
function prepareInvocation(input: AgentProcessInput): { invocation: AgentInvocation; format: 'stream-json' | 'text'; parser: AgentStream } {
  const { options } = input;
  const name: AgentName = options.outputFormat === 'text' ? 'text' : (options.agent ?? 'claude');
  const format = name === 'text' ? 'text' : 'stream-json';
  const adapter = agentAdapter(name);
  if (name === 'text' && !options.agentCommand) {
    throw new RunFailure('text output needs an agent command (BATON_AGENT_COMMAND) naming the CLI to run');
  }
  const command = options.agentCommand ?? [adapter.executable];
  const invocation: AgentInvocation = input.resumeSessionId
    ? adapter.resumeInvocation(command, input.resumeSessionId, input.prompt, input.session)
    : adapter.invocation(command, input.prompt, input.session);
  return { invocation, format, parser: adapter.createStream() };
}

/** The raw stream into `rawFile`, its secrets masked across chunk boundaries. */
function openRawStream(rawFile: string, log: AgentLog): { push(text: string): void; end(): void } {
  const raw = fs.openSync(rawFile, 'a');
  const rawMask = log.createStreamMask();
  const writeRaw = (text: string) => {
    try {
      if (text !== '') fs.writeSync(raw, text);
    } catch {
      // A full disk must not stop the run: the readable log and the progress stream go on.
    }
  };
  return {
    push: (text) => writeRaw(rawMask.push(text)),
    end() {
      writeRaw(rawMask.end());
      fs.closeSync(raw);
    },
  };
}

interface OutputReader {
  stdoutLine(line: string, cut: number): void;
  stderrLine(line: string): void;
  stderrTail: Tail;
  outputTail: Tail;
  /** Output lines too long to read (only in the raw log). */
  readonly cutLines: number;
}

/**
 * Reads the agent's output line by line into the log: a text agent's lines as they are, a
 * stream's through its parser, whose usage is reported as it grows and checked against the cap.
 */
function createOutputReader(input: AgentProcessInput, format: 'stream-json' | 'text', parser: AgentStream): OutputReader {
  const { log } = input;
  const tokenCap = input.options.tokenCap ?? 0;
  const stderrTail = createTail(20);
  const outputTail = createTail(40);
  let cutLines = 0;
  let lastTokens = 0;
  return {
    stdoutLine(line, cut) {
      if (cut > 0) {
        cutLines += 1;
        log.write(
          `[baton] an output line of ${(line.length + cut).toLocaleString('en-US')} characters is too long to read; ` +
            `it is only in the raw log (.baton/agent.ndjson): ${line.slice(0, 200)}…`,
        );
        return;
      }
      if (format === 'text') {
        outputTail.add(line);
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
    stderrLine(line) {
      stderrTail.add(line);
      log.write(`[stderr] ${line}`);
    },
    stderrTail,
    outputTail,
    get cutLines() {
      return cutLines;
    },
  };
}

/** A text agent: exit code 0 is success, and its last output lines are the summary. */
function textOutcome(exit: ProcessExit, output: OutputReader): AgentProcessResult {
  const exitCode = exit.code;
  const text = output.outputTail
    .lines()
    .filter((l) => l.trim() !== '')
    .slice(-20)
    .join('\n');
  if (exitCode === 0)
    return { status: 'succeeded', exitCode, summary: text || 'agent finished with exit code 0', usage: null, costUsd: null };
  return {
    status: 'failed',
    exitCode,
    summary: `agent ${exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exitCode}`}${lastLine(output.stderrTail) ? `: ${lastLine(output.stderrTail)}` : ''}`,
    usage: null,
    costUsd: null,
    kind: FAILURE_KIND.agentError,
  };
}

/** A stream: its result message decides; without one the run failed, with what the stream and stderr said. */
function streamOutcome(exit: ProcessExit, parser: AgentStream, output: OutputReader): AgentProcessResult {
  const exitCode = exit.code;
  const { stderrTail, cutLines } = output;
  const outcome = parser.outcome({ code: exitCode, signal: exit.signal ?? null, stderr: stderrTail.lines() });
  const found = { sessionId: parser.sessionId, model: parser.model };
  if (!outcome) {
    // Any usage at all, cache tokens included (streamedTokens counts input + output only).
    const usage = Object.values(parser.streamedUsage).some((n) => n > 0) ? parser.streamedUsage : null;
    const how = exit.signal ? `killed by ${exit.signal}` : `exit code ${exitCode}`;
    const err = lastLine(stderrTail);
    const cut = cutLines > 0 ? `; ${cutLines} output line(s) were too long to read, see .baton/agent.ndjson` : '';
    return {
      status: 'failed',
      exitCode,
      summary: `agent output had no result message (${how})${err ? `; last stderr line: ${err}` : ''}${cut}${hintFor(stderrTail.lines())}`,
      usage,
      costUsd: null,
      kind: FAILURE_KIND.noResult,
      ...found,
    };
  }
  return { ...outcome, exitCode, ...found };
}

/** The command line without the prompt (which can be long and is in the log already). */
function describeInvocation(invocation: AgentInvocation, format: 'stream-json' | 'text'): string {
  if (format === 'text') return `${invocation.command} (prompt ${invocation.promptVia === 'stdin' ? 'on stdin' : 'as an argument'})`;
  const args = invocation.promptVia === 'argument' ? invocation.args.slice(0, -1) : invocation.args;
  return `${[invocation.command, ...args].join(' ')}${invocation.promptVia === 'stdin' ? ' (prompt on stdin)' : ' <prompt>'}`;
}

type Tail = ReturnType<typeof createTail>;

/** The last `size` lines, each cut to MAX_TAIL_LINE characters: what summaries quote. */
function createTail(size: number) {
  const kept: string[] = [];
  return {
    add(line: string) {
      kept.push(line.length > MAX_TAIL_LINE ? `${line.slice(0, MAX_TAIL_LINE)}…` : line);
      if (kept.length > size) kept.shift();
    },
    lines: () => kept,
  };
}

/** Known startup failures of Claude Code, with what to do about them. */
function hintFor(stderr: readonly string[]): string {
  if (stderr.some((l) => l.includes('cannot be used with root/sudo privileges'))) {
    return ' (Claude Code refuses --dangerously-skip-permissions as root: run the workspace as a non-root user, or set IS_SANDBOX=1 in its env if it is a disposable sandbox)';
  }
  return '';
}

function lastLine(tail: { lines(): readonly string[] }): string | undefined {
  return tail
    .lines()
    .filter((l) => l.trim() !== '')
    .at(-1)
    ?.trim();
}
