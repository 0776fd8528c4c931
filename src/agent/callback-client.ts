import type { AgentUsage, CompletionBody, ProgressBody, PromptReport } from '../runner-contract/index.js';

export interface CallbackClientOptions {
  /** Full completion URL, e.g. `http://baton:3000/api/runs/42/complete`. */
  callbackUrl: string;
  /** @default callbackUrl with its trailing `/complete` replaced by `/progress` */
  progressUrl?: string;
  token: string;
  fetch?: typeof fetch;
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
  /** Longest time spent retrying the completion callback. @default 900_000 (15 min) */
  maxRetryMs?: number;
  /** First retry delay, doubled per attempt. @default 1_000 */
  retryBaseMs?: number;
  /** @default 60_000 */
  retryMaxDelayMs?: number;
  /** Per-request timeout. @default 30_000 */
  requestTimeoutMs?: number;
  /** Local log for delivery problems (never sent back to the server). */
  log?: (line: string) => void;
  /**
   * Called once when the completion could not be delivered (refused, or the retry budget spent),
   * with what was to be sent: the runner keeps it as a durable record next to its log.
   */
  onUndelivered?: (record: UndeliveredCompletion) => void;
}

export interface DeliveryResult {
  delivered: boolean;
  attempts: number;
  /** HTTP status of the last response, if any. */
  lastStatus?: number;
}

/** What a runner records when its completion callback never got through. */
export interface UndeliveredCompletion {
  body: CompletionBody;
  attempts: number;
  lastStatus?: number;
  /** The last problem, e.g. `HTTP 401` or `connect ECONNREFUSED`. */
  problem: string;
  /** Epoch ms of the first and the last attempt. */
  firstAttemptAt: number;
  lastAttemptAt: number;
}

export interface CallbackClient {
  readonly progressUrl: string;
  /**
   * Retries with exponential backoff until a 2xx, a refused body (400, 413, 422), or the retry
   * budget is spent; then, undelivered, calls `onUndelivered`.
   */
  complete(body: CompletionBody): Promise<DeliveryResult>;
  /** One attempt; failures are logged and reported as false, never thrown. */
  progress(body: ProgressBody): Promise<boolean>;
}

/**
 * Statuses that retrying cannot fix: the body itself was refused (malformed, too large). A refused
 * token (401/403) or an unknown run (404) is retried like a failure: baton may be mid-recovery
 * (a restarted server, another replica, a run being re-claimed), and giving up at the first
 * refusal would lose the run's result for good.
 */
const FINAL_STATUSES = new Set([400, 413, 422]);

export function deriveProgressUrl(callbackUrl: string): string {
  const url = new URL(callbackUrl);
  url.pathname = url.pathname.replace(/\/complete\/?$/, '/progress');
  if (url.pathname === new URL(callbackUrl).pathname) url.pathname = `${url.pathname.replace(/\/$/, '')}/progress`;
  return url.toString();
}

export function createCallbackClient(options: CallbackClientOptions): CallbackClient {
  const doFetch = options.fetch ?? fetch;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const now = options.now ?? Date.now;
  const maxRetryMs = options.maxRetryMs ?? 15 * 60_000;
  const baseMs = options.retryBaseMs ?? 1_000;
  const maxDelayMs = options.retryMaxDelayMs ?? 60_000;
  const timeoutMs = options.requestTimeoutMs ?? 30_000;
  const log = options.log ?? (() => {});
  const progressUrl = options.progressUrl ?? deriveProgressUrl(options.callbackUrl);

  const post = async (url: string, body: unknown): Promise<number> => {
    const response = await doFetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${options.token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    // Drain the body so the connection can be reused or closed.
    await response.arrayBuffer().catch(() => undefined);
    return response.status;
  };

  return {
    progressUrl,
    async complete(body) {
      const started = now();
      let attempts = 0;
      let lastStatus: number | undefined;
      const giveUp = (problem: string): DeliveryResult => {
        // Loud: the last lines of the runner's log are what an operator reads first.
        log(
          `[baton] ERROR: the completion callback was not delivered (${problem}) after ${attempts} attempts; ` +
            "the run's result is kept in .baton/undelivered-completion.json in the workspace",
        );
        options.onUndelivered?.({ body, attempts, lastStatus, problem, firstAttemptAt: started, lastAttemptAt: now() });
        return { delivered: false, attempts, lastStatus };
      };
      for (;;) {
        attempts += 1;
        let problem: string;
        try {
          lastStatus = await post(options.callbackUrl, body);
          if (lastStatus >= 200 && lastStatus < 300) {
            log(`[baton] completion callback delivered (HTTP ${lastStatus}, attempt ${attempts})`);
            return { delivered: true, attempts, lastStatus };
          }
          if (FINAL_STATUSES.has(lastStatus)) {
            log(`[baton] completion callback refused with HTTP ${lastStatus} (the server does not accept its body); not retrying`);
            return giveUp(`HTTP ${lastStatus}`);
          }
          problem =
            lastStatus === 401 || lastStatus === 403
              ? `HTTP ${lastStatus}: the callback token was not accepted`
              : lastStatus === 404
                ? 'HTTP 404: the server does not know this run'
                : `HTTP ${lastStatus}`;
        } catch (err) {
          problem = describeFetchError(err);
        }
        const delay = Math.min(maxDelayMs, baseMs * 2 ** (attempts - 1));
        if (now() - started + delay > maxRetryMs) return giveUp(problem);
        log(`[baton] completion callback failed (${problem}); retrying in ${Math.round(delay / 100) / 10} s`);
        await sleep(delay);
      }
    },
    async progress(body) {
      try {
        const status = await post(progressUrl, body);
        if (status >= 200 && status < 300) return true;
        log(`[baton] progress update refused with HTTP ${status}`);
      } catch (err) {
        log(`[baton] progress update failed: ${describeFetchError(err)}`);
      }
      return false;
    },
  };
}

function describeFetchError(err: unknown): string {
  if (err instanceof Error) {
    const cause = (err as Error & { cause?: unknown }).cause;
    const code = cause && typeof cause === 'object' && 'code' in cause ? String((cause as { code: unknown }).code) : '';
    return code ? `${err.message} (${code})` : err.message;
  }
  return String(err);
}

export interface ProgressReporterOptions {
  send: (body: ProgressBody) => Promise<boolean>;
  /** @default 1_000 */
  intervalMs?: number;
  /** A batch is sent as soon as this many lines are waiting. @default 50 */
  maxLines?: number;
  /** Most lines in one request (the server keeps at most 1,000 per batch). @default 200 */
  maxBatch?: number;
  /** Longer lines are cut, so a batch stays far below the server's 1 MB body limit. @default 4_000 */
  maxLineLength?: number;
  /** Lines kept while the server is unreachable or slower than the output; older ones are dropped. @default 5_000 */
  maxBuffered?: number;
  /** The same bound in characters, so that waiting lines never hold much memory. @default 1_000_000 */
  maxBufferedChars?: number;
}

export interface ProgressReporter {
  add(line: string): void;
  setUsage(usage: AgentUsage, costUsd?: number): void;
  /** Sends the prompt the agent got with the next batch (once). */
  setPrompt(prompt: PromptReport): void;
  /** Sends what is waiting and resolves when the in-flight request is done. */
  flush(): Promise<void>;
  /** Stops the timer after a last flush. */
  close(): Promise<void>;
}

/**
 * Batches log lines for PROGRESS_URL: at most one request in flight, best-effort. When the agent
 * writes faster than the server takes batches, the newest lines are kept and the oldest dropped
 * (counted in a line of their own); every step is constant time per line, so a burst of output
 * is read as fast as it comes.
 */
export function createProgressReporter(options: ProgressReporterOptions): ProgressReporter {
  const maxLines = options.maxLines ?? 50;
  const maxBuffered = options.maxBuffered ?? 5_000;
  const maxBufferedChars = options.maxBufferedChars ?? 1_000_000;
  const maxBatch = options.maxBatch ?? 200;
  const maxLineLength = options.maxLineLength ?? 4_000;
  // A queue as an array and the index of its first line: dropping from the front is O(1).
  let queue: string[] = [];
  let head = 0;
  let queuedChars = 0;
  let dropped = 0;
  let usage: AgentUsage | undefined;
  let costUsd: number | undefined;
  let usageDirty = false;
  let prompt: PromptReport | undefined;
  let inFlight: Promise<void> | null = null;
  let closed = false;

  const waiting = () => queue.length - head;
  const compact = () => {
    if (head > 1_024 && head * 2 > queue.length) {
      queue = queue.slice(head);
      head = 0;
    }
  };

  const sendNow = (): Promise<void> => {
    if (inFlight) return inFlight;
    if (waiting() === 0 && dropped === 0 && !usageDirty && !prompt) return Promise.resolve();
    const batch = queue.slice(head, head + maxBatch);
    head += batch.length;
    for (const line of batch) queuedChars -= line.length;
    compact();
    const lines = dropped > 0 ? [`[baton] ${dropped} log lines were not sent (see the full log)`, ...batch] : batch;
    dropped = 0;
    const body: ProgressBody = { lines };
    if (usageDirty && usage) body.usage = usage;
    if (usageDirty && costUsd !== undefined) body.costUsd = costUsd;
    usageDirty = false;
    if (prompt) body.prompt = prompt;
    prompt = undefined;
    inFlight = options
      .send(body)
      .then(() => undefined)
      .finally(() => {
        inFlight = null;
      });
    return inFlight;
  };

  const timer = setInterval(() => void sendNow(), options.intervalMs ?? 1_000);
  timer.unref();

  return {
    add(line) {
      if (closed) return;
      const kept = line.length > maxLineLength ? `${line.slice(0, maxLineLength)}…` : line;
      queue.push(kept);
      queuedChars += kept.length;
      while (waiting() > maxBuffered || queuedChars > maxBufferedChars) {
        queuedChars -= queue[head]!.length;
        head += 1;
        dropped += 1;
      }
      compact();
      if (waiting() >= maxLines && !inFlight) void sendNow();
    },
    setUsage(next, cost) {
      usage = next;
      if (cost !== undefined) costUsd = cost;
      usageDirty = true;
    },
    setPrompt(next) {
      prompt = next;
    },
    async flush() {
      if (inFlight) await inFlight;
      do await sendNow();
      while (waiting() > 0);
    },
    async close() {
      if (closed) return;
      clearInterval(timer);
      await this.flush();
      closed = true;
    },
  };
}
