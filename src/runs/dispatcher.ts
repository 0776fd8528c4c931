import { randomBytes } from 'node:crypto';
import { createLoop, errorMessage, PermanentError, settleWithin } from '../background/index.js';
import type { Logger } from '../log/index.js';
import type { Store } from '../store/index.js';
import { transientErrorCode, type WorkspaceProvider, type WorkspaceSpec } from '../workspaces/index.js';
import { hashCallbackToken, NOTIFY_CHANNEL, type RunService } from './engine.js';
import { LeaseLostError } from './errors.js';
import { isLive } from './states.js';
import type { ClaimedRun, Run, RunQueries } from './types.js';

export interface DispatcherOptions {
  engine: RunService;
  /** The reads the dispatcher makes: the next delayed run, and a run whose lease it lost. */
  runs: Pick<RunQueries, 'get' | 'nextDelayedRunAt'>;
  /** Where other replicas' wake-ups arrive (PostgreSQL LISTEN; nothing on SQLite). */
  store: Pick<Store, 'listen'>;
  provider: WorkspaceProvider;
  logger: Logger;
  /** Derives the workspace name from the run (deterministic: a re-claim finds the same workspace). */
  workspaceName: (run: Run) => string;
  /** Everything but the name and callback token, which the dispatcher makes. */
  buildSpec: (run: Run, name: string, callbackToken: string) => WorkspaceSpec;
  leaseMs: number;
  /** Fallback poll in case a wake-up signal is missed. */
  pollMs: number;
  /**
   * How long `stop()` waits for workspaces being provisioned. What is left keeps its lease, which
   * runs out and hands the run to the next claim (here after a restart, or on another replica),
   * which adopts the workspace by name. @default 10_000
   */
  stopWaitMs?: number;
}

export interface Dispatcher {
  start(): Promise<void>;
  /** Stops claiming and waits (bounded) for in-flight provisioning to finish its current step. */
  stop(): Promise<void>;
  /** Claims once now (tests use it to step the dispatcher). */
  tick(): Promise<number>;
}

/**
 * Claims due runs whenever work or capacity may have appeared and provisions a workspace for
 * each. Wake-ups are hints (this process's commits, PostgreSQL NOTIFY from other replicas); the
 * loop's poll and a wait timed to the next delayed run catch anything they miss.
 */
export function createDispatcher(options: DispatcherOptions): Dispatcher {
  const { engine, runs, provider, logger, pollMs } = options;
  const inFlight = new Set<Promise<void>>();
  let stopListening: (() => Promise<void>) | undefined;
  let unsubscribe: (() => void) | undefined;
  let starting: Promise<void> | undefined;
  let stopping: Promise<void> | undefined;

  const loop = createLoop({
    name: 'dispatcher',
    logger,
    pollMs,
    // A claim takes every due run a slot is free for. What it leaves waits for a slot, and what
    // frees one (a run ending here, a resume, new work) wakes the loop: claiming again at once
    // would find nothing. What is left to time is the next delayed run.
    async step() {
      await tick();
      const now = Date.now();
      const next = await runs.nextDelayedRunAt(now);
      return next === null ? pollMs : next - now + 1;
    },
  });

  async function tick(): Promise<number> {
    const claimed = await engine.claim();
    for (const claim of claimed) {
      const job = provision(claim).finally(() => inFlight.delete(job));
      inFlight.add(job);
    }
    return claimed.length;
  }

  async function provision({ run, leaseToken }: ClaimedRun): Promise<void> {
    const log = logger.child({ runId: run.id, key: run.key });
    const name = options.workspaceName(run);
    const token = randomBytes(32).toString('base64url');
    const heartbeat = setInterval(
      () => {
        engine.heartbeat(run.id, leaseToken).then(
          (held) => held || log.warn('lease lost while provisioning'),
          (err: unknown) => log.warn({ error: errorMessage(err) }, 'heartbeat failed'),
        );
      },
      Math.max(50, Math.floor(options.leaseMs / 3)),
    );
    let created = false;
    try {
      const spec = options.buildSpec(run, name, token);
      const { earlierTokenHashes } = await engine.recordWorkspace(run.id, leaseToken, {
        workspaceName: name,
        callbackTokenHash: hashCallbackToken(token),
        tokenCap: spec.tokenCap,
        maxDurationMs: spec.maxDurationMs,
      });
      log.info({ workspace: name, attempt: run.attempts }, 'provisioning workspace');
      let workspace = await provider.create({ ...spec, adoptableTokenHashes: earlierTokenHashes });
      created = true;
      if (provider.waitUntilRunning) workspace = await provider.waitUntilRunning(name);
      await engine.markRunning(run.id, leaseToken, { workspaceId: workspace.id });
      log.info({ workspace: name }, 'workspace running');
    } catch (err) {
      if (err instanceof LeaseLostError) {
        // Cancelled, or completed already by a fast callback, or re-claimed elsewhere. A
        // workspace this claim made for a run that has since ended must not be left behind.
        const current = await runs.get(run.id);
        if (created && current && !isLive(current.status)) await engine.requestTeardown(run.id, name);
        log.info({ status: current?.status }, 'run left provisioning elsewhere');
        return;
      }
      const permanent = err instanceof PermanentError;
      const transient = permanent ? null : transientErrorCode(err);
      log.warn({ err, permanent, transient }, transient ? 'provisioning failed for a while; the run waits' : 'provisioning failed');
      const options = permanent ? { permanent } : transient ? { transient } : {};
      await engine.failAttempt(run.id, leaseToken, errorMessage(err), options).catch((failErr: unknown) => {
        if (!(failErr instanceof LeaseLostError)) log.error({ err: failErr }, 'could not record the provisioning failure');
      });
    } finally {
      clearInterval(heartbeat);
    }
  }

  return {
    start() {
      starting ??= (async () => {
        unsubscribe = engine.on('queue:wake', loop.wake);
        stopListening = await options.store
          .listen(NOTIFY_CHANNEL, (payload) => payload !== 'events' && loop.wake())
          .catch((err: unknown) => {
            logger.warn({ error: errorMessage(err) }, 'cannot LISTEN for wake-ups; relying on polling');
            return undefined;
          });
        if (!stopping) loop.start();
      })();
      return starting;
    },
    stop() {
      stopping ??= (async () => {
        await starting;
        unsubscribe?.();
        await stopListening?.();
        await loop.stop();
        await settleWithin([...inFlight], options.stopWaitMs ?? 10_000);
      })();
      return stopping;
    },
    tick,
  };
}
