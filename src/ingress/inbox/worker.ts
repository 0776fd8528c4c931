import { performance } from 'node:perf_hooks';
import {
  backoffDelay,
  createLoop,
  createQueueWorker,
  errorMessage,
  type BackgroundLogger,
  type BackoffPolicy,
  type Loop,
  type WakeSource,
  RetryLaterError,
} from '../../background/index.js';
import type { Store } from '../../store/index.js';
import { DeliveryLeaseLostError } from './errors.js';
import type { DeliveryProcessor } from './process.js';
import { createAcceptPressure, type AcceptPressure } from './accept-pressure.js';
import { INBOX_CHANNEL, type InboxStore } from './store.js';
import type { ClaimedDelivery } from './types.js';

export interface InboxWorkerOptions {
  inbox: InboxStore;
  process: DeliveryProcessor;
  /** For the PostgreSQL wake-up channel (inserts by other replicas). */
  store: Pick<Store, 'dialect' | 'listen'>;
  /** `info` (when present) gets one line per verdict. */
  logger: BackgroundLogger & { info?(details: object, message: string): void };
  /**
   * How long a taken delivery is held before another worker may take it again (its worker died).
   * Longer than the slowest processing (a permission lookup's timeout plus the enqueue).
   * @default 60_000
   */
  leaseMs?: number;
  /** Fallback poll; wake-ups normally come from the commit of an insert. @default 5_000 */
  pollMs?: number;
  /** Backoff of a delivery that failed transiently; retried for ever, never dropped. @default BACKOFF.inbox */
  retry: BackoffPolicy;
  /** Deliveries processed at once (of different issues: one issue's are strictly in order). @default 4 */
  concurrency?: number;
  /**
   * When accepting needs the event loop (deliveries arriving, loop busy): processing then takes one
   * delivery per `busyPauseMs`. @default createAcceptPressure() (utilization over 0.5)
   */
  pressure?: AcceptPressure;
  /** The pause between deliveries while the pressure is high. @default 50 */
  busyPauseMs?: number;
  now?: () => number;
  random?: () => number;
}

export interface InboxWorker {
  start(): Promise<void>;
  /** Stops taking deliveries and waits for those in progress. */
  stop(): Promise<void>;
  wake(): void;
}

/**
 * The inbox worker: takes stored deliveries (oldest first, in order per issue, see
 * InboxStore.claimDue), processes each (process.ts) and records its verdict; a transient failure
 * puts the delivery off with backoff (`Retry-After` when the forge sent one). A worker killed at
 * any point leaves at most a leased row, taken again once the lease expires: the verdict and the
 * runs it started commit together, so a re-take never starts a run twice.
 */
export function createInboxWorker(options: InboxWorkerOptions): InboxWorker {
  const { inbox, logger } = options;
  const now = options.now ?? Date.now;
  const leaseMs = options.leaseMs ?? 60_000;
  const pollMs = options.pollMs ?? 5_000;
  const concurrency = Math.max(1, options.concurrency ?? 4);
  const pressure = options.pressure ?? createAcceptPressure();
  const busyPauseMs = options.busyPauseMs ?? 50;
  /** performance.now() when the last delivery finished. */
  let lastFinishedAt = -Infinity;
  const inFlight = new Set<Promise<void>>();

  async function handle(claimed: ClaimedDelivery): Promise<void> {
    const { delivery } = claimed;
    const log = { delivery: delivery.id, deliveryId: delivery.deliveryId, endpoint: delivery.endpoint, attempt: delivery.attempts };
    try {
      // A replay (the inspector's, a new row naming the original) bypasses dedup on purpose.
      const verdict = await options.process(claimed, { force: delivery.source === 'replay' });
      logger.info?.({ ...log, outcome: verdict.outcome, verdict: verdict.verdict, runIds: verdict.runIds }, 'webhook delivery processed');
    } catch (err) {
      if (err instanceof DeliveryLeaseLostError) {
        logger.warn({ ...log }, 'webhook delivery taken over by another worker; its result here is discarded');
        return;
      }
      const delayMs =
        err instanceof RetryLaterError && err.delayMs !== undefined
          ? err.delayMs
          : backoffDelay(options.retry, delivery.attempts, options.random);
      const error = errorMessage(err);
      if (!(err instanceof RetryLaterError)) logger.error({ ...log, err }, 'webhook delivery failed unexpectedly; retrying');
      else logger.warn({ ...log, error, retryInMs: delayMs }, 'webhook delivery put off');
      // When even this fails (the database is away), the lease runs out and the delivery is taken again.
      await inbox
        .retryLater(claimed, delayMs, error)
        .catch((retryErr: unknown) =>
          logger.warn(
            { ...log, error: errorMessage(retryErr) },
            'could not put the webhook delivery off; it is taken again after its lease',
          ),
        );
    }
  }

  function track(claimed: ClaimedDelivery): Promise<void> {
    const work = handle(claimed).finally(() => {
      lastFinishedAt = performance.now();
      inFlight.delete(work);
      worker.wake();
    });
    inFlight.add(work);
    return work;
  }

  const createWorkerLoop = (): Loop =>
    createLoop({
      name: 'inbox worker',
      logger,
      pollMs,
      async step() {
        // Accepting first: while deliveries arrive on a busy loop, one at a time with a pause
        // (accept-pressure.ts). It never stops: a trickle still gets through.
        const yielding = pressure.high();
        const free = (yielding ? 1 : concurrency) - inFlight.size;
        if (free <= 0) return pollMs; // a finished delivery wakes the loop
        if (yielding) {
          // Counted from the end of the last delivery: on a busy loop one can take longer than
          // the pause itself, and counting from its start would leave no pause at all.
          const wait = lastFinishedAt + busyPauseMs - performance.now();
          if (wait > 0) return wait;
        }
        // Claim first, in one transaction for every free slot: with a backlog (the case that has
        // to be fast) there is work at once, and the claim reads only due rows. The next due time
        // is asked only when the claim came back short, to know how long to sleep.
        const claimed = worker.stopping ? [] : await inbox.claimDue(leaseMs, free);
        for (const one of claimed) void track(one);
        if (claimed.length === free) return pollMs; // full: a finished delivery wakes the loop
        const due = await inbox.nextDueAt();
        if (due === null) return pollMs;
        if (due > now()) return Math.max(10, due - now());
        // Due but not taken: another replica is taking it right now (or it was stored meanwhile).
        return claimed.length > 0 ? 0 : pollMs;
      },
    });

  const wakeSources: WakeSource[] = [
    (wake) =>
      inbox.onInsert(() => {
        pressure.noteInsert();
        wake();
      }),
  ];
  // Inserts by other replicas, told by NOTIFY; an SQLite database has no other writers.
  if (options.store.dialect === 'postgres') wakeSources.push((wake) => options.store.listen(INBOX_CHANNEL, wake));
  const worker = createQueueWorker({ name: 'inbox worker', logger, createLoop: createWorkerLoop, wakeSources, inFlight });
  return worker;
}
