/**
 * The kernel every background worker is built on: one loop (wakeable, stoppable, with a fallback
 * poll), one lifecycle for the workers that take rows of a durable queue with it (inbox, outbox),
 * one backoff with named policies, one pair of job errors (permanent, retry later), one way to turn a thrown value into text, and typed local
 * events whose failing listeners are logged.
 */
export { BACKOFF, backoffDelay, type BackoffPolicy } from './backoff.js';
export { codeOf, errorMessage } from './errors.js';
export { PermanentError, RetryLaterError } from './job-errors.js';
export { createEvents, type EventMap, type Events } from './events.js';
export { createLoop, settleWithin, type Loop, type LoopOptions } from './loop.js';
export { createQueueWorker, type QueueWorker, type QueueWorkerOptions, type WakeSource } from './queue-worker.js';
export { consoleLogger, silentLogger, type BackgroundLogger } from './logger.js';
