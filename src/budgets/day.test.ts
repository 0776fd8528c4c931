import { describe, expect, it } from 'vitest';
import { dayKey, isTimeZone, nextDayStart } from './day.js';

describe('budget days', () => {
  it('names the day in the configured zone', () => {
    const t = Date.UTC(2026, 11, 1, 23, 30);
    expect(dayKey(t, 'UTC')).toBe('2026-12-01');
    expect(dayKey(t, 'Europe/Berlin')).toBe('2026-12-02');
    expect(dayKey(t, 'America/New_York')).toBe('2026-12-01');
  });

  it('finds the next midnight in the zone', () => {
    const t = Date.UTC(2026, 11, 1, 12, 0);
    expect(nextDayStart(t, 'UTC')).toBe(Date.UTC(2026, 11, 2));
    expect(nextDayStart(t, 'Europe/Berlin')).toBe(Date.UTC(2026, 11, 1, 23));
    // Just before midnight is still today; midnight itself is tomorrow's start.
    expect(nextDayStart(Date.UTC(2026, 11, 1, 23, 59, 59, 999), 'UTC')).toBe(Date.UTC(2026, 11, 2));
    expect(nextDayStart(Date.UTC(2026, 11, 2), 'UTC')).toBe(Date.UTC(2026, 11, 3));
  });

  it('counts days of 23 and 25 hours where daylight saving time changes', () => {
    // Europe/Berlin: 2026-03-29 has 23 hours, 2026-10-25 has 25.
    const spring = Date.UTC(2026, 2, 28, 23);
    expect(nextDayStart(spring, 'Europe/Berlin') - spring).toBe(23 * 3_600_000);
    const autumn = Date.UTC(2026, 9, 24, 22);
    expect(nextDayStart(autumn, 'Europe/Berlin') - autumn).toBe(25 * 3_600_000);
  });

  it('tells IANA zones from anything else', () => {
    expect(isTimeZone('Europe/Berlin')).toBe(true);
    expect(isTimeZone('Mars/Olympus')).toBe(false);
  });
});
