import { checkSection } from '../config-schema/index.js';
import { queueSection } from '../runs/index.js';
import type { QueueConfig } from './config-types.js';

/** The queue settings with nothing configured, for code that builds a run engine on its own (tests, benchmarks). */
export function defaultQueueConfig(): QueueConfig {
  return checkSection(queueSection, 'queue', undefined, undefined).value;
}

/** For callers that spread the defaults: `{ ...DEFAULTS.queue, concurrency: 4 }`. */
export const DEFAULTS = {
  get queue(): QueueConfig {
    return defaultQueueConfig();
  },
};
