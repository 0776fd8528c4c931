import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { PermanentWorkspaceError, type WorkspaceProvider, type WorkspaceSpec } from '../workspaces/index.js';
import { hashCallbackToken, LeaseLostError, NOTIFY_CHANNEL, type FullRunEngine } from './engine.js';
import type { Store } from '../store/index.js';
import type { ClaimedRun, Run } from './types.js';

export interface DispatcherOptions {
  engine: FullRunEngine;
  store: Store;
  provider: WorkspaceProvider;
  logger: Logger;
  /** Derives the workspace name from the run (deterministic: a re-claim finds the same workspace). */
  workspaceName: (run: Run) => string;
  /** Everything but the name and callback token, which the dispatcher makes. */
  buildSpec: (run: Run, name: string, callbackToken: string) => WorkspaceSpec;
  leaseMs: number;
  /** Fallback poll in case a wake-up signal is missed. */
  pollMs: number;
}

export interface Dispatcher {
  start(): Promise<void>;
  /** Stops claiming and waits for in-flight provisioning to finish its current step. */
  stop(): Promise<void>;
  /** Claims once now (tests use it to step the dispatcher). */
  tick(): Promise<number>;
}

/**
 * Claims due runs whenever work or capacity may have appeared and provisions a workspace for
 * each. Wake-ups are hints (in-process signals, PostgreSQL NOTIFY from other replicas); a slow
 * poll and a timer for the next delayed run catch anything they miss.
 */
export function createDispatcher(options: DispatcherOptions): Dispatcher {
  const { engine, provider, logger } = options;
  const inFlight = new Set<Promise<void>>();
  let running = false;
  let loop: Promise<void> | undefined;
  let wakeRequested = false;
  let wakeUp: (() => void) | undefined;
  let stopListening: (() => Promise<void>) | undefined;
  let unsubscribe: (() => void) | undefined;
  let stopping: Promise<void> | undefined;

  const wake = () => {
    wakeRequested = true;
    wakeUp?.();
  };

  async function sleep(ms: number): Promise<void> {
    if (wakeRequested || !running) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wakeUp = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    wakeUp = undefined;
  }

  async function tick(): Promise<number> {
    const claimed = await engine.claim();
    for (const claim of claimed) {
      const job = provision(claim).finally(() => inFlight.delete(job));
      inFlight.add(job);
    }
    return claimed.length;
  }

  async function run(): Promise<void> {
    let failures = 0;
    while (running) {
      wakeRequested = false;
      try {
        const claimed = await tick();
        failures = 0;
        if (claimed > 0) continue;
        const next = await engine.nextRunAt();
        const untilDue = next === null ? options.pollMs : Math.max(0, next - Date.now());
        await sleep(Math.min(options.pollMs, untilDue + 1));
      } catch (err) {
        // The database is unreachable or refused: back off, keep the process alive, retry.
        failures += 1;
        logger.error({ err }, 'dispatcher could not claim runs; retrying');
        await sleep(Math.min(30_000, 250 * 2 ** Math.min(failures, 7)));
      }
    }
  }

  async function provision({ run, leaseToken }: ClaimedRun): Promise<void> {
    const log = logger.child({ runId: run.id, key: run.key });
    const name = options.workspaceName(run);
    const token = randomBytes(32).toString('base64url');
    const heartbeat = setInterval(
      () => {
        engine.heartbeat(run.id, leaseToken).then(
          (held) => held || log.warn('lease lost while provisioning'),
          (err) => log.warn({ err }, 'heartbeat failed'),
        );
      },
      Math.max(50, Math.floor(options.leaseMs / 3)),
    );
    let created = false;
    try {
      await engine.recordWorkspace(run.id, leaseToken, { workspaceName: name, callbackTokenHash: hashCallbackToken(token) });
      log.info({ workspace: name, attempt: run.attempts }, 'provisioning workspace');
      let workspace = await provider.create(options.buildSpec(run, name, token));
      created = true;
      if (provider.waitUntilRunning) workspace = await provider.waitUntilRunning(name);
      await engine.markRunning(run.id, leaseToken, { workspaceId: workspace.id });
      log.info({ workspace: name }, 'workspace running');
    } catch (err) {
      if (err instanceof LeaseLostError) {
        // Cancelled, or completed already by a fast callback, or re-claimed elsewhere. A
        // workspace this claim made for a run that has since ended must not be left behind.
        const current = await engine.get(run.id);
        if (created && current && current.status !== 'running' && current.status !== 'provisioning') {
          await engine.requestTeardown(run.id, name);
        }
        log.info({ status: current?.status }, 'run left provisioning elsewhere');
        return;
      }
      const message = err instanceof Error ? err.message : String(err);
      const permanent = err instanceof PermanentWorkspaceError;
      log.warn({ err, permanent }, 'provisioning failed');
      await engine.failAttempt(run.id, leaseToken, message, { permanent }).catch((failErr: unknown) => {
        if (!(failErr instanceof LeaseLostError)) log.error({ err: failErr }, 'could not record the provisioning failure');
      });
    } finally {
      clearInterval(heartbeat);
    }
  }

  return {
    async start() {
      if (running) return;
      running = true;
      unsubscribe = engine.onWake(wake);
      stopListening = await options.store
        .listen(NOTIFY_CHANNEL, (payload) => payload !== 'events' && wake())
        .catch((err: unknown) => {
          logger.warn({ err }, 'cannot LISTEN for wake-ups; relying on polling');
          return undefined;
        });
      loop = run();
    },
    stop() {
      stopping ??= (async () => {
        running = false;
        wakeUp?.();
        unsubscribe?.();
        await stopListening?.();
        await loop;
        await Promise.allSettled([...inFlight]);
      })();
      return stopping;
    },
    tick,
  };
}
