import { Cron } from 'croner';
import { describe, expect, it } from 'vitest';
import { dueSlot } from './scheduler.js';

const HOUR = 3_600_000;
const monday9 = () => new Cron('0 9 * * 1', { timezone: 'UTC', paused: true });

describe('dueSlot', () => {
  it('is the slot just passed', () => {
    expect(dueSlot(monday9(), Date.parse('2026-11-30T09:00:30Z'), HOUR)).toBe(Date.parse('2026-11-30T09:00:00Z'));
  });

  it('is the slot itself at its exact time', () => {
    expect(dueSlot(monday9(), Date.parse('2026-11-30T09:00:00Z'), HOUR)).toBe(Date.parse('2026-11-30T09:00:00Z'));
  });

  it('is none before the slot, or once the catch-up window has passed', () => {
    expect(dueSlot(monday9(), Date.parse('2026-11-30T08:59:59Z'), HOUR)).toBeNull();
    expect(dueSlot(monday9(), Date.parse('2026-11-30T10:00:01Z'), HOUR)).toBeNull();
  });

  it('still fires a slot missed by downtime within the window, once, as the latest slot', () => {
    const everyTen = new Cron('*/10 * * * *', { timezone: 'UTC', paused: true });
    // Down from 09:05 to 09:37: the 09:10, 09:20 and 09:30 slots were missed; only 09:30 fires.
    expect(dueSlot(everyTen, Date.parse('2026-11-30T09:37:00Z'), HOUR)).toBe(Date.parse('2026-11-30T09:30:00Z'));
  });

  it('follows the schedule’s time zone', () => {
    const berlin = new Cron('0 9 * * 1', { timezone: 'Europe/Berlin', paused: true });
    // 09:00 in Berlin in winter is 08:00 UTC.
    expect(dueSlot(berlin, Date.parse('2026-11-30T08:00:10Z'), HOUR)).toBe(Date.parse('2026-11-30T08:00:00Z'));
    expect(dueSlot(berlin, Date.parse('2026-11-30T07:59:59Z'), HOUR)).toBeNull();
  });
});
