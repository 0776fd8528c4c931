import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { BenchOptions } from './options.js';
import type { QueuePeer, WorkerHooks } from './peers/types.js';
import { postgresServerCpu } from './server-cpu.js';

/** Latency-stream jobs are numbered from here, so late claims of earlier phases never count. */
const STREAM_BASE = 10_000_000;
/** Setup, worker start/stop and teardown must not hang the bench either. */
const LIFECYCLE_TIMEOUT_MS = 30_000;

export interface Throughput {
  done: number;
  target: number;
  seconds: number;
  perSecond: number;
  /**
   * CPU time of this Node process per job (user + system). On a busy machine the rate says how
   * much of the CPU we got; this says how much we needed (all of it, for SQLite, which runs in-process).
   */
  cpuMicrosPerJob: number;
  /** CPU time of the local PostgreSQL server per job, when it runs on this machine (server-cpu.ts). */
  serverCpuMicrosPerJob?: number;
}

export interface Latency {
  sent: number;
  received: number;
  p50: number;
  p99: number;
  max: number;
  requestedRate: number;
  /** The stream's actual rate: lower than asked when the process could not keep the pace. */
  achievedRate: number;
}

export interface PeerResult {
  peer: QueuePeer;
  enqueue?: Throughput;
  claim?: Throughput;
  latency?: Latency;
  errors: number;
  firstError?: string;
  /** Longest event-loop delay while the worker ran (claim→complete and latency phases). */
  loopDelayMaxMs?: number;
  /** Set when a step failed outright; the phases after it did not run. */
  failed?: string;
}

/**
 * One peer through the three phases: enqueue `jobs` (no worker running), claim→complete those
 * jobs with one worker, then a steady stream at `rate` while that worker waits.
 */
export async function measurePeer(peer: QueuePeer, options: BenchOptions, log: (line: string) => void): Promise<PeerResult> {
  const result: PeerResult = { peer, errors: 0 };
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  // The worker's callbacks go to whichever phase is current.
  let onClaimed: (seq: number) => void = () => {};
  let onCompleted: (count: number) => void = () => {};
  const hooks: WorkerHooks = {
    claimed: (seq) => onClaimed(seq),
    completed: (count = 1) => onCompleted(count),
    error: (err) => {
      result.errors += 1;
      result.firstError ??= err instanceof Error ? err.message : String(err);
    },
  };
  const phaseMs = options.phaseTimeoutSeconds * 1000;
  let step = 'setup';
  try {
    await bounded(peer.setup(), 'setup');

    step = 'enqueue';
    result.enqueue = await enqueuePhase(peer, options.jobs, options.producers, phaseMs);
    log(`  enqueue          ${describe(result.enqueue)}`);

    step = 'claim→complete';
    const target = result.enqueue.done;
    let completed = 0;
    let firstClaimAt: number | undefined;
    let finish: () => void = () => {};
    const allDone = new Promise<void>((resolve) => (finish = resolve));
    onClaimed = () => (firstClaimAt ??= performance.now());
    let deadline = Number.POSITIVE_INFINITY;
    onCompleted = (count) => {
      completed += count;
      // Checked here too: a synchronous store (better-sqlite3) can keep the event loop busy with
      // promise callbacks so long that the phase timer itself fires late.
      if (completed >= target || performance.now() > deadline) finish();
    };
    const startedAt = performance.now();
    const cpuBefore = process.cpuUsage();
    const serverCpuBefore = serverCpu(peer);
    loopDelay.enable();
    deadline = performance.now() + phaseMs;
    await bounded(peer.startWorker(options.concurrency, hooks), 'worker start');
    await within(allDone, Math.max(0, deadline - performance.now()));
    const endedAt = performance.now();
    // Timed from the first claim: connecting the worker is start-up, not throughput.
    const seconds = (endedAt - (firstClaimAt ?? startedAt)) / 1000;
    const claimedJobs = Math.min(completed, target);
    result.claim = {
      done: claimedJobs,
      target,
      seconds,
      perSecond: claimedJobs / seconds,
      cpuMicrosPerJob: cpuPerJob(cpuBefore, claimedJobs),
      serverCpuMicrosPerJob: serverCpuPerJob(peer, serverCpuBefore, claimedJobs),
    };
    log(`  claim→complete   ${describe(result.claim)}`);
    if (completed < target) await bounded(peer.purge(), 'purge');

    step = 'latency';
    result.latency = await latencyPhase(peer, options, (claimed) => (onClaimed = claimed));
    onCompleted = () => {};
    loopDelay.disable();
    result.loopDelayMaxMs = loopDelay.max / 1e6;
    log(
      `  latency          p50 ${fmtMs(result.latency.p50)} ms, p99 ${fmtMs(result.latency.p99)} ms ` +
        `(${result.latency.received}/${result.latency.sent} claimed; stream ran at ${Math.round(result.latency.achievedRate)} jobs/s)`,
    );
    log(`  event loop       longest delay ${fmtMs(result.loopDelayMaxMs)} ms while the worker ran`);
  } catch (err) {
    result.failed = `${step}: ${err instanceof Error ? err.message : String(err)}`;
    log(`  FAILED at ${result.failed}`);
  } finally {
    await bounded(peer.stopWorker(), 'worker stop').catch((err: unknown) => log(`  worker stop: ${String(err)}`));
    await bounded(peer.teardown(), 'teardown').catch((err: unknown) => log(`  teardown: ${String(err)}`));
  }
  return result;
}

async function enqueuePhase(peer: QueuePeer, jobs: number, producers: number, timeoutMs: number): Promise<Throughput> {
  const startedAt = performance.now();
  const cpuBefore = process.cpuUsage();
  const serverCpuBefore = serverCpu(peer);
  const deadline = startedAt + timeoutMs;
  let next = 0;
  let done = 0;
  const producer = async () => {
    while (next < jobs && performance.now() < deadline) {
      await peer.enqueue(next++);
      done += 1;
    }
  };
  await Promise.all(Array.from({ length: producers }, producer));
  const seconds = (performance.now() - startedAt) / 1000;
  return {
    done,
    target: jobs,
    seconds,
    perSecond: done / seconds,
    cpuMicrosPerJob: cpuPerJob(cpuBefore, done),
    serverCpuMicrosPerJob: serverCpuPerJob(peer, serverCpuBefore, done),
  };
}

/**
 * Open loop: job i is enqueued at start + i/rate whatever the previous enqueues are doing, and its
 * latency runs from the moment enqueue() is called to the moment a worker receives it.
 */
async function latencyPhase(peer: QueuePeer, options: BenchOptions, setOnClaimed: (fn: (seq: number) => void) => void): Promise<Latency> {
  const total = Math.max(1, Math.round(options.rate * options.seconds));
  const sentAt = new Float64Array(total);
  const latencies: number[] = [];
  let finish: () => void = () => {};
  const allClaimed = new Promise<void>((resolve) => (finish = resolve));
  setOnClaimed((seq) => {
    const i = seq - STREAM_BASE;
    if (i < 0 || i >= total || sentAt[i] === 0) return;
    latencies.push(performance.now() - sentAt[i]!);
    sentAt[i] = 0;
    if (latencies.length === total) finish();
  });

  const interval = 1000 / options.rate;
  const enqueues: Array<Promise<void>> = [];
  let enqueueErrors = 0;
  const startedAt = performance.now();
  for (let sent = 0; sent < total;) {
    const due = Math.min(total, Math.floor((performance.now() - startedAt) / interval) + 1);
    for (; sent < due; sent++) {
      sentAt[sent] = performance.now();
      enqueues.push(peer.enqueue(STREAM_BASE + sent).catch(() => void (enqueueErrors += 1)));
    }
    const wait = startedAt + sent * interval - performance.now();
    if (wait > 0) await sleep(wait);
  }
  const streamSeconds = (performance.now() - startedAt) / 1000;
  await Promise.all(enqueues);
  await within(allClaimed, options.drainSeconds * 1000);
  setOnClaimed(() => {});
  if (enqueueErrors > 0) throw new Error(`${enqueueErrors} enqueues of the latency stream failed`);

  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.max(0, Math.ceil(q * latencies.length) - 1)] ?? Number.NaN;
  return {
    sent: total,
    received: latencies.length,
    p50: at(0.5),
    p99: at(0.99),
    max: at(1),
    requestedRate: options.rate,
    achievedRate: total > 1 && streamSeconds > 0 ? (total - 1) / streamSeconds : options.rate,
  };
}

function cpuPerJob(before: NodeJS.CpuUsage, jobs: number): number {
  const used = process.cpuUsage(before);
  return jobs > 0 ? (used.user + used.system) / jobs : Number.NaN;
}

/** The PostgreSQL server's CPU so far, for peers that keep their jobs there. */
function serverCpu(peer: QueuePeer): number | undefined {
  return peer.store.startsWith('PostgreSQL') ? postgresServerCpu() : undefined;
}

function serverCpuPerJob(peer: QueuePeer, before: number | undefined, jobs: number): number | undefined {
  const after = serverCpu(peer);
  return before === undefined || after === undefined || jobs === 0 ? undefined : (after - before) / jobs;
}

function describe(t: Throughput): string {
  const partial = t.done < t.target ? ` — stopped at the phase timeout, ${t.done}/${t.target} done` : '';
  return (
    `${Math.round(t.perSecond).toLocaleString('en-US')} jobs/s (${t.done} in ${t.seconds.toFixed(2)} s, ` +
    `${Math.round(t.cpuMicrosPerJob)} µs bench-process CPU/job` +
    `${t.serverCpuMicrosPerJob === undefined ? '' : `, ${Math.round(t.serverCpuMicrosPerJob)} µs PostgreSQL server CPU/job`})${partial}`
  );
}

export function fmtMs(ms: number): string {
  if (!Number.isFinite(ms)) return '—';
  return ms < 10 ? ms.toFixed(2) : ms < 100 ? ms.toFixed(1) : Math.round(ms).toString();
}

/** Waits for `promise` at most `ms`; either way no timer is left behind. */
async function within(promise: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([promise, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

async function bounded<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${LIFECYCLE_TIMEOUT_MS / 1000} s`)), LIFECYCLE_TIMEOUT_MS);
    timer.unref();
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
