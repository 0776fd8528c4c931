import { Cron } from 'croner';
import type { Logger } from 'pino';
import type { FullRunEngine } from './engine.js';
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
  engine: FullRunEngine;
  schedules: Schedule[];
  logger: Logger;
  now?: () => number;
  /** A slot missed by up to this much (downtime) still fires once. @default 3_600_000 */
  catchUpMs?: number;
}

export interface Scheduler {
  start(): void;
  stop(): void;
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
  let timer: NodeJS.Timeout | undefined;
  let running = false;

  /** The latest slot at or before `at`, if it lies within the catch-up window. */
  function dueSlot(cron: Cron, at: number): number | null {
    let slot: number | null = null;
    let cursor = cron.nextRun(new Date(at - catchUpMs - 1));
    while (cursor && cursor.getTime() <= at) {
      slot = cursor.getTime();
      cursor = cron.nextRun(cursor);
    }
    return slot;
  }

  async function tick(): Promise<string[]> {
    const fired: string[] = [];
    const at = now();
    for (const { schedule, cron } of crons) {
      const slot = dueSlot(cron, at);
      if (slot === null) continue;
      const slotId = new Date(slot).toISOString();
      const requests = schedule.tasks().map((task) => ({
        ...task,
        key: `${task.key ?? [task.stage, task.owner, task.repo].join('-')}-${slotId}`,
        payload: { ...task.payload, schedule: schedule.name, slot: slotId },
      }));
      if (await options.engine.fireSchedule(schedule.name, slot, requests)) {
        fired.push(`${schedule.name}@${slotId}`);
        options.logger.info({ schedule: schedule.name, slot: slotId, runs: requests.length }, 'schedule fired');
      }
    }
    return fired;
  }

  function plan(): void {
    if (!running) return;
    const at = now();
    const nexts = crons.map(({ cron }) => cron.nextRun(new Date(at))?.getTime() ?? Infinity);
    // Re-check at least once a minute: clocks jump, and a replica may have been paused.
    const wait = Math.max(0, Math.min(60_000, Math.min(...nexts) - at + 5));
    timer = setTimeout(() => {
      tick()
        .catch((err: unknown) => options.logger.error({ err }, 'scheduler tick failed'))
        .finally(plan);
    }, wait);
  }

  return {
    start() {
      if (running) return;
      running = true;
      tick()
        .catch((err: unknown) => options.logger.error({ err }, 'scheduler tick failed'))
        .finally(plan);
    },
    stop() {
      running = false;
      if (timer) clearTimeout(timer);
    },
    tick,
  };
}
