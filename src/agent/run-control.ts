import { FAILURE_KIND } from '../runner-contract/index.js';
import type { AgentLog } from './agent-log.js';
import type { StepResult, StepRunner } from './checkout.js';
import { startProcess, type GroupProcess } from './process-group.js';
import { DEFAULT_MAX_DURATION_MS, type RunAgentOptions } from './run-agent-options.js';
import { Stopped, type StopRequest } from './stop.js';

// When a run stops early, and what stops: the maximum duration and the runner's own termination
// (SIGTERM) each request a stop once; the first reason wins, the process running then is
// terminated, and every step after it throws `Stopped` instead of starting.

export interface RunControl {
  /** What the run is doing now (a step's label, `prompt`, `agent`, …), for the stop's summary. */
  phase: string;
  /** The stop requested, if any. */
  readonly stop: StopRequest | null;
  requestStop(request: StopRequest): void;
  /** Throws `Stopped` once a stop was requested. */
  throwIfStopped(): void;
  /** The process a stop terminates, while it runs; one that starts after the stop is terminated at once. */
  attach(proc: GroupProcess | null): void;
  /** Runs a step's command (git, install, build), its output into the log, as the stop allows. */
  exec: StepRunner;
  /** Ends the deadline and the abort listener. */
  dispose(): void;
}

export function createRunControl(options: RunAgentOptions, log: AgentLog, secretFreeEnv: () => NodeJS.ProcessEnv): RunControl {
  const graceMs = options.killGraceMs ?? 10_000;
  const maxDurationMs = options.maxDurationMs ?? DEFAULT_MAX_DURATION_MS;
  let current: GroupProcess | null = null;
  let stop: StopRequest | null = null;
  const control: RunControl = {
    phase: 'setup',
    get stop() {
      return stop;
    },
    requestStop(request) {
      if (stop) return;
      stop = request;
      log.write(`[baton] stopping: ${request.summary}`);
      void current?.terminate(graceMs);
    },
    throwIfStopped() {
      if (stop) throw new Stopped(stop);
    },
    attach(proc) {
      current = proc;
      if (proc && stop) void proc.terminate(graceMs);
    },
    exec: (label, command, args, stepOptions) => runStep(control, log, options, secretFreeEnv, { label, command, args, ...stepOptions }),
    dispose() {
      clearTimeout(deadline);
      options.signal?.removeEventListener('abort', onAbort);
    },
  };
  const deadline = setTimeout(() => {
    const limit = formatDuration(maxDurationMs);
    control.requestStop({
      status: 'timed_out',
      kind: FAILURE_KIND.maxDuration,
      summary:
        control.phase === 'agent'
          ? `agent exceeded the ${limit} maximum duration`
          : `run exceeded the ${limit} maximum duration during ${control.phase}`,
    });
  }, maxDurationMs);
  const onAbort = () =>
    control.requestStop({
      status: 'failed',
      kind: FAILURE_KIND.runnerTerminated,
      summary: `the runner was terminated (SIGTERM, e.g. the workspace was stopped) during ${control.phase === 'agent' ? 'the agent run' : control.phase}; the agent was stopped`,
    });
  if (options.signal?.aborted) onAbort();
  else options.signal?.addEventListener('abort', onAbort, { once: true });
  return control;
}

async function runStep(
  control: RunControl,
  log: AgentLog,
  options: RunAgentOptions,
  secretFreeEnv: () => NodeJS.ProcessEnv,
  step: { label: string; command: string; args: readonly string[]; cwd: string; env?: NodeJS.ProcessEnv },
): Promise<StepResult> {
  control.throwIfStopped();
  control.phase = step.label;
  const tail: string[] = [];
  const keep = (line: string) => {
    tail.push(log.mask(line));
    if (tail.length > 20) tail.shift();
  };
  const proc = startProcess(step.command, step.args, {
    cwd: step.cwd,
    env: { ...secretFreeEnv(), ...step.env },
    spawn: options.spawn,
    onStdoutLine: (line) => {
      keep(line);
      log.write(`[${step.label}] ${line}`);
    },
    onStderrLine: (line) => {
      keep(line);
      log.write(`[${step.label}] ${line}`);
    },
  });
  control.attach(proc);
  const exit = await proc.exited;
  control.attach(null);
  control.throwIfStopped();
  return { ...exit, tail } satisfies StepResult;
}

export function formatDuration(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  if (ms >= 60_000) return `${(ms / 60_000).toFixed(1)} min`;
  return `${Math.round(ms / 100) / 10} s`;
}
