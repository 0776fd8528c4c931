import fs from 'node:fs';

/** Linux reports process CPU in clock ticks of 1/100 s (`getconf CLK_TCK` is 100 on every Linux we run). */
const MICROS_PER_TICK = 10_000;

/**
 * CPU time so far (µs) of the PostgreSQL server's processes on this machine, including backends
 * that have exited (counted in the postmaster's `cutime`), or undefined when no `postgres` process
 * is visible (another host, another OS). Peers on PostgreSQL do part of their work there: a job
 * that costs this process little may cost the server much, and on a 2-core machine both share the CPUs.
 */
export function postgresServerCpu(): number | undefined {
  let ticks = 0;
  let seen = false;
  let entries: string[];
  try {
    entries = fs.readdirSync('/proc');
  } catch {
    return undefined;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    const close = stat.lastIndexOf(')');
    if (stat.slice(stat.indexOf('(') + 1, close) !== 'postgres') continue;
    // After "(comm)": state is field 3, utime, stime, cutime, cstime are fields 14 to 17.
    const fields = stat.slice(close + 2).split(' ');
    ticks += Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
    seen = true;
  }
  return seen ? ticks * MICROS_PER_TICK : undefined;
}
