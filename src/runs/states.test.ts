import { describe, expect, it } from 'vitest';
import {
  ALL_STATUSES,
  canTransition,
  FINAL_EVENT,
  FINAL_STATUSES,
  holdsSlot,
  INITIAL_STATUS,
  isFinal,
  isLive,
  LIVE_STATUSES,
  RUN_EVENT,
  SLOT_STATUSES,
  TRANSITIONS,
  wakesDispatcher,
  bringsWork,
  type RunStatus,
} from './states.js';

/** Every transition the engine makes, with the method that makes it. */
const ENGINE_MAKES: ReadonlyArray<[RunStatus, RunStatus, string]> = [
  ['queued', 'provisioning', 'claim'],
  ['queued', 'cancelled', 'cancel'],
  ['provisioning', 'running', 'markRunning'],
  ['provisioning', 'queued', 'failAttempt (retry) / reclaimExpiredLeases'],
  ['provisioning', 'dead', 'failAttempt / reclaimExpiredLeases after the last attempt'],
  ['provisioning', 'failed', 'failAttempt (permanent), or a fast callback'],
  ['provisioning', 'succeeded', 'a fast callback, before markRunning'],
  ['provisioning', 'timed_out', "a fast callback reporting the agent's own time limit"],
  ['provisioning', 'cancelled', 'cancel'],
  ['running', 'succeeded', 'complete'],
  ['running', 'failed', 'complete, reconcile'],
  ['running', 'timed_out', 'complete, stale sweep'],
  ['running', 'cancelled', 'cancel'],
  ['running', 'queued', 'complete, a transient agent failure with attempts left'],
  ['failed', 'queued', 'retry'],
  ['timed_out', 'queued', 'retry'],
  ['cancelled', 'queued', 'retry'],
  ['dead', 'queued', 'retry'],
  ['queued', 'held', 'claim, when a daily budget of the run is spent'],
  ['held', 'queued', 'claim, when its budgets have room again'],
  ['held', 'cancelled', 'cancel'],
  ['running', 'waiting', 'park: the agent asked a question'],
  ['provisioning', 'waiting', 'park, a fast callback with a question'],
  ['waiting', 'queued', 'resumeIn: a reply'],
  ['waiting', 'expired', 'expireWaiting: no reply in time'],
  ['waiting', 'cancelled', 'cancel'],
  ['expired', 'queued', 'retry'],
];

describe('run states', () => {
  it('allows exactly the transitions the engine makes', () => {
    const allowed = ALL_STATUSES.flatMap((from) => TRANSITIONS[from].map((to) => `${from} → ${to}`)).sort();
    expect(allowed).toEqual(ENGINE_MAKES.map(([from, to]) => `${from} → ${to}`).sort());
  });

  it('starts every run queued, and nowhere else', () => {
    expect(INITIAL_STATUS).toBe('queued');
    for (const to of ALL_STATUSES) expect(canTransition(null, to), to).toBe(to === 'queued');
  });

  it('never leaves succeeded, and leaves the other final states only to be queued again', () => {
    expect(TRANSITIONS.succeeded).toEqual([]);
    for (const from of FINAL_STATUSES) for (const to of TRANSITIONS[from]) expect(to).toBe('queued');
  });

  it('moves every live run back to queued only through a retry or a release', () => {
    for (const from of LIVE_STATUSES) expect(canTransition(from, 'queued'), from).toBe(from !== 'queued');
  });

  it('holds only queued runs, which keep their dedup key while held', () => {
    for (const from of ALL_STATUSES) expect(canTransition(from, 'held'), from).toBe(from === 'queued');
    expect(isLive('held')).toBe(true);
    expect(holdsSlot('held')).toBe(false);
  });

  it('has no transition from a state to itself', () => {
    for (const status of ALL_STATUSES) expect(canTransition(status, status), status).toBe(false);
  });

  it('keeps the status lists consistent with each other', () => {
    expect([...LIVE_STATUSES, ...FINAL_STATUSES].sort()).toEqual([...ALL_STATUSES].sort());
    for (const status of SLOT_STATUSES) expect(isLive(status)).toBe(true);
    for (const status of ALL_STATUSES) {
      expect(isFinal(status)).toBe((FINAL_STATUSES as readonly string[]).includes(status));
      expect(holdsSlot(status)).toBe(status === 'provisioning' || status === 'running');
    }
  });

  it('names an event for every final state', () => {
    expect(Object.keys(FINAL_EVENT).sort()).toEqual([...FINAL_STATUSES].sort());
    for (const status of FINAL_STATUSES) expect(FINAL_EVENT[status]).toBe(`run:${status}`);
    expect(Object.values(RUN_EVENT)).toEqual(expect.arrayContaining(Object.values(FINAL_EVENT)));
  });

  it('wakes dispatchers for new work and for freed slots only', () => {
    expect(wakesDispatcher(null, 'queued')).toBe(true);
    expect(wakesDispatcher('provisioning', 'queued')).toBe(true);
    expect(wakesDispatcher('failed', 'queued')).toBe(true);
    expect(wakesDispatcher('running', 'succeeded')).toBe(true);
    expect(wakesDispatcher('provisioning', 'dead')).toBe(true);
    expect(wakesDispatcher('queued', 'provisioning')).toBe(false);
    expect(wakesDispatcher('provisioning', 'running')).toBe(false);
    expect(wakesDispatcher('queued', 'cancelled')).toBe(false);
  });

  it("wakes other replicas' dispatchers for new work only: a freed slot is filled where it was freed", () => {
    expect(ALL_STATUSES.filter(bringsWork)).toEqual(['queued']);
  });
});
