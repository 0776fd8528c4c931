import { Cron } from 'croner';
import { createLoop } from '../background/index.js';
import type { Logger } from '../log/index.js';
import type { RunService } from './engine.js';
import { slotKey } from './keys.js';
import type { TaskRequest } from './types.js';

export interface Schedule {
  /** Stable name; part of every slot's dedup record. */
  name: string;
  /** Five-field cron expression, e.g. "0 9 * * 1" (Monday 09:00). */
  cron: string;
  timezone: string;
  /** The runs one firing enqueues. Their keys get the slot appended, so each slot runs once. */
  tasks: () => TaskRequest[];
}

export interface SchedulerOptions {
  engine: RunService;
  schedules: Schedule[];
  logger: Logger;
  now?: () => number;
  /** A slot missed by up to this much (downtime) still fires once. @default 3_600_000 */
  catchUpMs?: number;
}

export interface Scheduler {
  start(): void;
  stop(): Promise<void>;
  /** Fires every slot due at `now()` that has not fired yet; returns the names of the slots it fired. */
  tick(): Promise<string[]>;
}

/**
 * Fires cron slots exactly once across any number of replicas: the slot is recorded in
 * `schedule_fires` in the same transaction as its runs, so a second replica finds it taken.
 */
export function createScheduler(options: SchedulerOptions): Scheduler {
  const now = options.now ?? Date.now;
  const catchUpMs = options.catchUpMs ?? 3_600_000;
  const crons = options.schedules.map((s) => ({ schedule: s, cron: new Cron(s.cron, { timezone: s.timezone, paused: true }) }));
  const loop = createLoop({
    name: 'scheduler',
    logger: options.logger,
    // Re-check at least once a minute: clocks jump, and a replica may have been paused.
    pollMs: 60_000,
    async step() {
      await tick();
      const at = now();
      const next = Math.min(...crons.map(({ cron }) => cron.nextRun(new Date(at))?.getTime() ?? Infinity));
      return Math.max(0, next - at + 5);
    },
  });

  async function tick(): Promise<string[]> {
    const fired: string[] = [];
    const at = now();
    for (const { schedule, cron } of crons) {
      const slot = dueSlot(cron, at, catchUpMs);
      if (slot === null) continue;
      const slotId = new Date(slot).toISOString();
      const requests = schedule.tasks().map((task) => ({
        ...task,
        key: slotKey(task, slotId),
        payload: { ...task.payload, schedule: schedule.name, slot: slotId },
      }));
      if (await options.engine.fireSchedule(schedule.name, slot, requests)) {
        fired.push(`${schedule.name}@${slotId}`);
        options.logger.info({ schedule: schedule.name, slot: slotId, runs: requests.length }, 'schedule fired');
      }
    }
    return fired;
  }

  return {
    start() {
      if (crons.length > 0) loop.start();
    },
    stop: loop.stop,
    tick,
  };
}

/**
 * The latest slot of `cron` at or before `at`, if it lies within the catch-up window (a slot
 * missed by downtime still fires once); null when there is none.
 */
export function dueSlot(cron: Cron, at: number, catchUpMs: number): number | null {
  let slot: number | null = null;
  let cursor = cron.nextRun(new Date(at - catchUpMs - 1));
  while (cursor && cursor.getTime() <= at) {
    slot = cursor.getTime();
    cursor = cron.nextRun(cursor);
  }
  return slot;
}
