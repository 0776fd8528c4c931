/**
 * Usage and cost come from the workspace: the agent's own output and the runner's callbacks. The
 * agent is untrusted, so each number is a claim, checked where it is parsed. A claim that is not
 * a finite number between 0 and its ceiling counts as zero (never as a credit: one negative token
 * count would otherwise switch a daily budget off), and the caller says so in the run's log.
 */

/** Most tokens one field of one run may claim: far above any real run (a day of a busy agent is ~10^8). */
export const MAX_CLAIMED_TOKENS = 1_000_000_000;
/** Most dollars one run may claim. */
export const MAX_CLAIMED_COST_USD = 100_000;

export type ClaimKind = 'tokens' | 'costUsd';

export interface RefusedClaim {
  /** Where the value was found, e.g. `usage.inputTokens` or `result.total_cost_usd`. */
  field: string;
  value: unknown;
  /** The log line for the run: what was refused and why. */
  line: string;
}

/**
 * The claimed number, or null when the claim is refused (then `refused` gets a line saying why).
 * `undefined` and `null` are not claims: they are absent, and yield null without a refusal.
 */
export function checkClaim(value: unknown, kind: ClaimKind, field: string, refused: RefusedClaim[]): number | null {
  if (value === undefined || value === null) return null;
  const ceiling = kind === 'tokens' ? MAX_CLAIMED_TOKENS : MAX_CLAIMED_COST_USD;
  const ok = typeof value === 'number' && Number.isFinite(value) && value >= 0 && value <= ceiling;
  if (ok) return value;
  refused.push({
    field,
    value,
    line:
      `[baton] refused ${field} = ${describe(value)} from the workspace: ` +
      `${kind === 'tokens' ? 'a token count' : 'a cost in USD'} must be a finite number from 0 to ${ceiling.toLocaleString('en-US')}; it counts as 0`,
  });
  return null;
}

/** Only what can be added to a budget or a cap: a finite, non-negative amount (else 0). */
export function nonNegative(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 0;
}

function describe(value: unknown): string {
  if (typeof value === 'number') return String(value);
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
}
