import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The run-scoped forge credential an agent gets in `GITEA_TOKEN` instead of the bot's token:
 * `bgw_<run id>_<mac>`, where the MAC is keyed by the hash of the run's callback token (random per
 * claim, only its hash stored). So the capability is tied to the run and its attempt, needs no
 * table of its own, and dies with what the callback token dies with; the gateway accepts it only
 * while the run is live. What it is worth: the run's own repository, through the gateway only.
 */
const PREFIX = 'bgw_';
const LABEL = 'baton forge gateway capability v1';

export function capabilityFor(runId: number, callbackTokenHash: string): string {
  return `${PREFIX}${runId}_${mac(runId, callbackTokenHash)}`;
}

/** The run a presented capability names, or null when it is not shaped like one. */
export function parseCapability(presented: string): { runId: number; mac: string } | null {
  const match = /^bgw_(\d{1,15})_([A-Za-z0-9_-]{43})$/.exec(presented);
  return match ? { runId: Number(match[1]), mac: match[2]! } : null;
}

/** Whether `presentedMac` is the MAC of `runId` under this callback token hash (constant time). */
export function macMatches(runId: number, callbackTokenHash: string, presentedMac: string): boolean {
  const expected = Buffer.from(mac(runId, callbackTokenHash));
  const given = Buffer.from(presentedMac);
  return expected.length === given.length && timingSafeEqual(expected, given);
}

function mac(runId: number, callbackTokenHash: string): string {
  return createHmac('sha256', callbackTokenHash).update(`${LABEL}:${runId}`).digest('base64url');
}
