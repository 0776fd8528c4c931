import { performance } from 'node:perf_hooks';

/**
 * Whether the accept path needs the event loop more than the inbox worker does: deliveries are
 * arriving (an insert committed in this process lately) and the loop is busy. The worker then
 * takes one delivery at a time with a pause between them, so a burst of webhooks is answered at
 * the speed of accepting alone instead of queueing behind processing: Gitea waits at most 5 s for
 * its answer and never retries, while the inbox keeps what is accepted until it is processed.
 * `npm run bench:ingress` measures it.
 */
export interface AcceptPressure {
  /** A delivery was stored (the inbox's `onInsert`). */
  noteInsert(): void;
  /**
   * True while deliveries arrive and the loop's utilization is over the threshold (and, once
   * true, until it falls under half the threshold).
   */
  high(): boolean;
}

export interface AcceptPressureOptions {
  /**
   * Event-loop utilization (0..1, over the last window) above which arriving deliveries take
   * precedence; 1 turns yielding off. Half: the accept path at 1,000 deliveries/s takes about a
   * third of the loop, and answers late once the worker fills the rest (bench:ingress).
   * @default 0.5
   */
  threshold?: number;
  /** How long after the last insert deliveries still count as arriving (ms). @default 500 */
  arrivingMs?: number;
  /** The loop's recent utilization (tests). @default performance.eventLoopUtilization over 50 ms windows */
  utilization?: () => number;
  /** Monotonic ms (tests). @default performance.now */
  clock?: () => number;
}

export function createAcceptPressure(options: AcceptPressureOptions = {}): AcceptPressure {
  const threshold = options.threshold ?? 0.5;
  const arrivingMs = options.arrivingMs ?? 500;
  const clock = options.clock ?? (() => performance.now());
  const utilization = options.utilization ?? windowedUtilization(50);
  let lastInsertAt = -Infinity;
  let yielding = false;
  return {
    noteInsert() {
      lastInsertAt = clock();
    },
    high() {
      if (threshold >= 1 || clock() - lastInsertAt > arrivingMs) return (yielding = false);
      // Hysteresis: once yielding, the loop is mostly the accept path's, and the worker stays
      // back until that leaves it half of the threshold. Without it, every window the worker
      // came back at full speed filled the loop again, and the answers of that window waited.
      const busy = utilization();
      yielding = busy > (yielding ? threshold / 2 : threshold);
      return yielding;
    },
  };
}

/** The loop's utilization over the last complete window of `windowMs` (or the current one at start). */
function windowedUtilization(windowMs: number): () => number {
  let mark = performance.eventLoopUtilization();
  let markedAt = performance.now();
  let last = 0;
  return () => {
    const t = performance.now();
    if (t - markedAt >= windowMs) {
      const next = performance.eventLoopUtilization();
      last = performance.eventLoopUtilization(next, mark).utilization;
      mark = next;
      markedAt = t;
    }
    return last;
  };
}
