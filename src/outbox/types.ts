/**
 * Outbox entry states.
 *
 *   pending ──delivered──► delivered
 *     │ ▲
 *     │ └── retryable failure: back to pending, due after a backoff
 *     └──── permanent failure, or attempts exhausted ──► failed (kept; `retry` re-arms it)
 *
 * A pending entry whose lease is in the future is being delivered by some worker.
 */
export const OUTBOX_STATUS = {
  pending: 'pending',
  delivered: 'delivered',
  failed: 'failed',
} as const;

export type OutboxStatus = (typeof OUTBOX_STATUS)[keyof typeof OUTBOX_STATUS];

/** Known kinds; another module may register more handlers under its own kind name. */
export const OUTBOX_KIND = {
  comment: 'comment',
  webhook: 'webhook',
} as const;

export interface NewOutboxEntry {
  /** Picks the handler that delivers it. @example 'comment' */
  kind: string;
  /** JSON-serialisable; the handler for `kind` reads it. */
  payload: unknown;
  /**
   * Entries sharing a key are delivered one at a time, oldest first; an entry waits while an
   * older one with its key is still pending (including its retries).
   * @example 'comment:acme/app#42'
   */
  orderingKey?: string | null;
  /** A second entry with the same key is ignored, so a repeated insert cannot post twice. */
  dedupKey?: string | null;
  runId?: number | null;
  /** @default the outbox's maxAttempts (20) */
  maxAttempts?: number;
  /** Not before this many ms from now. @default 0 */
  delayMs?: number;
}

export interface OutboxEntry {
  id: number;
  kind: string;
  orderingKey: string | null;
  dedupKey: string | null;
  runId: number | null;
  payload: unknown;
  status: OutboxStatus;
  /** Delivery attempts started so far, counting the one in progress. */
  attempts: number;
  maxAttempts: number;
  nextAttemptAt: number;
  lastError: string | null;
  /** What the handler returned for a delivered entry (e.g. the comment id). */
  result: unknown;
  createdAt: number;
  updatedAt: number;
  deliveredAt: number | null;
}

/**
 * Delivers one entry. Resolve (optionally with a JSON-serialisable result) when it is done;
 * throw `PermanentError` (background/) when retrying cannot help, `RetryLaterError` to choose
 * the delay, anything else to retry with backoff. `entry.attempts` is 1 on the first try.
 */
export type OutboxHandler = (entry: OutboxEntry) => Promise<unknown>;

/** pino-compatible; only what the outbox uses. */
export interface OutboxLogger {
  warn(details: Record<string, unknown>, message: string): void;
  error(details: Record<string, unknown>, message: string): void;
}

export interface OutboxFilter {
  status?: OutboxStatus;
  kind?: string;
  runId?: number;
  /** @default 100 */
  limit?: number;
}
