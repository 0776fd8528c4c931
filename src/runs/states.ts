/**
 * Run states, the transitions between them, and the names of the events that record them.
 *
 *   queued ──claim──► provisioning ──workspace up──► running ──callback──► succeeded | failed | timed_out
 *     ▲                    │ │                          │
 *     │                    │ └─fast callback (before    ├──stale sweep──► timed_out
 *     │                    │   the workspace was seen   └──cancel──────► cancelled
 *     │                    │   up)──► succeeded | failed | timed_out
 *     ├──retry (backoff)───┤ provisioning failed, or its lease expired
 *     ├──agent retry (backoff)── running | provisioning: the agent failed transiently (retries.ts)
 *     │                    ├──permanent failure──► failed
 *     │                    ├──attempts used up──► dead
 *     │                    └──cancel──► cancelled
 *     ├──operator retry── failed | timed_out | cancelled | dead
 *     │
 *     └──budget spent (at claim)──► held ──budget reset or raised──► queued
 *
 *     running | provisioning ──agent asked──► waiting ──reply──► queued (same session, new workspace)
 *                                               ├──no reply in time──► expired
 *                                               └──cancel──► cancelled
 *
 * A queued run can be cancelled too, and so can a held one. `held` is a queued run that a spent
 * daily budget keeps from starting (budgets/): it keeps its dedup key and its place in line
 * (`run_at`), and the claim that finds its budget available again puts it back in `queued`. `provisioning` holds a lease (short, heartbeated);
 * `running` holds a concurrency slot but no lease: a run may wait hours for its callback and must
 * not be re-claimed meanwhile. Every change of status is checked against `TRANSITIONS` by the one
 * function that writes transitions (`recordTransition`); anything else throws
 * `IllegalTransitionError` and rolls its transaction back.
 */
export const RUN_STATUS = {
  queued: 'queued',
  provisioning: 'provisioning',
  running: 'running',
  succeeded: 'succeeded',
  failed: 'failed',
  timedOut: 'timed_out',
  cancelled: 'cancelled',
  dead: 'dead',
  held: 'held',
  /** Its agent asked a question and ended: no workspace, no slot, until a reply resumes it. */
  waiting: 'waiting',
  /** A waiting run whose question got no reply in time. */
  expired: 'expired',
} as const;

export type RunStatus = (typeof RUN_STATUS)[keyof typeof RUN_STATUS];

export const ALL_STATUSES: readonly RunStatus[] = Object.values(RUN_STATUS);

/** States in which a run owns its dedup key: at most one such run per key (migration 0066 added `held`). */
export const LIVE_STATUSES = ['queued', 'provisioning', 'running', 'held', 'waiting'] as const satisfies readonly RunStatus[];

/** States that hold a concurrency slot (a live workspace or one being made). */
export const SLOT_STATUSES = ['provisioning', 'running'] as const satisfies readonly RunStatus[];

export const FINAL_STATUSES = ['succeeded', 'failed', 'timed_out', 'cancelled', 'dead', 'expired'] as const satisfies readonly RunStatus[];

export type FinalStatus = (typeof FINAL_STATUSES)[number];

/** What a workspace may report at the end of its run (the completion callback's `status`). */
export const OUTCOME_STATUSES = ['succeeded', 'failed', 'timed_out'] as const satisfies readonly FinalStatus[];

/** The counts the queue's statistics report: live runs, and the ended ones that need a look. */
export const COUNTED_STATUSES = ['queued', 'held', 'provisioning', 'running', 'dead', 'failed'] as const satisfies readonly RunStatus[];

export type CountedStatus = (typeof COUNTED_STATUSES)[number];

/** Every run starts here. */
export const INITIAL_STATUS = RUN_STATUS.queued;

/** Each state's allowed next states: exactly what the engine does, nothing more. */
export const TRANSITIONS: Readonly<Record<RunStatus, readonly RunStatus[]>> = {
  queued: ['provisioning', 'cancelled', 'held'],
  // succeeded, failed, timed_out: the workspace's callback can arrive before the dispatcher has
  // seen the workspace up (a fast agent, a slow provider answer).
  provisioning: ['running', 'queued', 'dead', 'succeeded', 'failed', 'timed_out', 'cancelled', 'waiting'],
  // queued: a transient failure of the agent (retries.ts), tried again after a backoff.
  // waiting: the agent asked a question (conversation.ts); it parks without a workspace.
  running: ['succeeded', 'failed', 'timed_out', 'cancelled', 'queued', 'waiting'],
  succeeded: [],
  failed: ['queued'],
  timed_out: ['queued'],
  cancelled: ['queued'],
  dead: ['queued'],
  held: ['queued', 'cancelled'],
  // queued: a reply resumes the same session in a new workspace.
  waiting: ['queued', 'expired', 'cancelled'],
  expired: ['queued'],
};

export function isFinal(status: RunStatus): status is FinalStatus {
  return (FINAL_STATUSES as readonly RunStatus[]).includes(status);
}

export function isLive(status: RunStatus): boolean {
  return (LIVE_STATUSES as readonly RunStatus[]).includes(status);
}

export function holdsSlot(status: RunStatus): boolean {
  return (SLOT_STATUSES as readonly RunStatus[]).includes(status);
}

/** `from` null is a new run. */
export function canTransition(from: RunStatus | null, to: RunStatus): boolean {
  return from === null ? to === INITIAL_STATUS : TRANSITIONS[from].includes(to);
}

/**
 * Whether a transition gives a dispatcher something to do: new work (into `queued`) or a freed
 * concurrency slot (out of provisioning or running).
 */
export function wakesDispatcher(from: RunStatus | null, to: RunStatus): boolean {
  return bringsWork(to) || (from !== null && holdsSlot(from) && !holdsSlot(to));
}

/**
 * Whether a transition gives every replica's dispatcher something to do: new work. A freed slot
 * needs only this process's dispatcher, which is woken in-process and claims for the whole queue
 * (the concurrency limit is one count across replicas).
 */
export function bringsWork(to: RunStatus): boolean {
  return to === RUN_STATUS.queued;
}

/**
 * Event names written to `run_events.type` and emitted to listeners. One per transition,
 * plus `run:progress` for log/usage batches, `run:coalesced` when a duplicate merged into a
 * queued run and `run:followup` when a duplicate asked for a re-run.
 */
export const RUN_EVENT = {
  queued: 'run:queued',
  coalesced: 'run:coalesced',
  followup: 'run:followup',
  claimed: 'run:claimed',
  started: 'run:started',
  retrying: 'run:retrying',
  succeeded: 'run:succeeded',
  failed: 'run:failed',
  timedOut: 'run:timed_out',
  cancelled: 'run:cancelled',
  dead: 'run:dead',
  progress: 'run:progress',
  /** The prompt the agent got, as its runner reported it (data: text, arguments, source, file, model; cut: true when longer than stored). */
  prompt: 'run:prompt',
  requeued: 'run:requeued',
  /** queued → held: a daily budget of the run's scope is spent (data: scope, reason). */
  held: 'run:held',
  /** held → queued: its budgets have room again (a new day, a raised limit). */
  released: 'run:released',
  /** running → waiting: the agent asked (data: question, for). */
  waiting: 'run:waiting',
  /** waiting → queued: a reply came (data: by, turn). */
  resumed: 'run:resumed',
  /** waiting → expired: no reply in time. */
  expired: 'run:expired',
  workspaceDeleted: 'workspace:deleted',
} as const;

export type RunEventType = (typeof RUN_EVENT)[keyof typeof RUN_EVENT];

/** The event that records a run reaching each final state. */
export const FINAL_EVENT: Readonly<Record<FinalStatus, RunEventType>> = {
  succeeded: RUN_EVENT.succeeded,
  failed: RUN_EVENT.failed,
  timed_out: RUN_EVENT.timedOut,
  cancelled: RUN_EVENT.cancelled,
  dead: RUN_EVENT.dead,
  expired: RUN_EVENT.expired,
};

/**
 * How a run's `lastError` starts when its agent claimed success that the forge did not show
 * (server/outcome-check.ts); the rest is baton's own sentence, shown on the issue as it is.
 */
export const OUTCOME_MISSING = 'outcome_missing: ';
