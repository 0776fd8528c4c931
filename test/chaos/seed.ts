/**
 * Seeds and length of the chaos suite. Every scenario draws its faults (which event a kill
 * follows, after how long, which replica, how long a cut lasts) from a seeded generator and prints
 * the seed: `CHAOS_SEED=<seed>` replays the same draws. The moments themselves still depend on
 * the machine's speed, so a replay reproduces the plan of faults, not every interleaving.
 *
 * `CHAOS_DURATION=<seconds>` (`npm run chaos`) repeats each scenario's rounds of events and faults
 * until that much time has passed; without it each scenario runs one round, the short form `npm
 * test` runs.
 */
export const CHAOS_DURATION_MS = Number(process.env.CHAOS_DURATION ?? 0) * 1000;

export interface Random {
  seed: number;
  /** A whole number in [min, max]. */
  int(min: number, max: number): number;
  chance(p: number): boolean;
  pick<T>(items: readonly T[]): T;
}

export function chaosRandom(scenario: string): Random {
  const seed = process.env.CHAOS_SEED ? Number(process.env.CHAOS_SEED) : Math.floor(Math.random() * 2 ** 31);
  console.log(`[chaos] ${scenario}: seed ${seed} (replay with CHAOS_SEED=${seed})`);
  // mulberry32: small, fast, and the same sequence for the same seed everywhere.
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    seed,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    chance: (p) => next() < p,
    pick: (items) => items[Math.floor(next() * items.length)]!,
  };
}

/** A scenario's vitest timeout: its short form's bound, plus the long form's duration. */
export function chaosTimeout(shortMs: number): number {
  return shortMs + CHAOS_DURATION_MS;
}

/** How many rounds a scenario runs: one, or as many as fit in CHAOS_DURATION. */
export function moreRounds(startedAt: number, roundsDone: number): boolean {
  return roundsDone === 0 || Date.now() - startedAt < CHAOS_DURATION_MS;
}

/**
 * Waits `ms` before injecting the next fault. This is the fault's random moment, drawn from the
 * seed; it never stands in for waiting on the system (that is `until`).
 */
export function faultDelay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
