/**
 * Days in the budgets' time zone. A budget is per calendar day there; its usage rows are keyed by
 * the day's `YYYY-MM-DD`, and held runs are released at the next day's start.
 */

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    // en-CA formats dates as YYYY-MM-DD.
    f = new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' });
    formatters.set(timeZone, f);
  }
  return f;
}

/** `YYYY-MM-DD` of the day `t` (epoch ms) falls in, in `timeZone`. */
export function dayKey(t: number, timeZone: string): string {
  return formatter(timeZone).format(new Date(t));
}

/**
 * When the day after the one `t` falls in starts, in `timeZone` (epoch ms). Found by bisection on
 * `dayKey` rather than by offset arithmetic, so days of 23 or 25 hours (daylight saving) and zones
 * whose midnight is skipped come out right.
 */
export function nextDayStart(t: number, timeZone: string): number {
  const today = dayKey(t, timeZone);
  // Every zone's day is shorter than 27 hours; at least 1 ms ahead is tomorrow's side.
  let low = t;
  let high = t + 27 * 3_600_000;
  while (high - low > 1) {
    const mid = Math.floor((low + high) / 2);
    if (dayKey(mid, timeZone) === today) low = mid;
    else high = mid;
  }
  return high;
}

export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}
