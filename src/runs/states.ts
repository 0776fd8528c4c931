/**
 * Run states and the transitions between them.
 *
 *   queued ──claim──► provisioning ──workspace up──► running ──callback──► succeeded | failed
 *     ▲                    │                            │
 *     └──retry (backoff)───┤ provisioning failed        ├──stale sweep──► timed_out
 *                          └──attempts exhausted──► dead└──cancel──────► cancelled
 *
 * A queued or provisioning run can also be cancelled. `provisioning` holds a lease (short,
 * heartbeated); `running` holds a concurrency slot but no lease: a run may wait hours for its
 * callback and must not be re-claimed meanwhile.
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
} as const;

export type RunStatus = (typeof RUN_STATUS)[keyof typeof RUN_STATUS];

/** States in which a run owns its dedup key: at most one such run per key. */
export const LIVE_STATUSES = ['queued', 'provisioning', 'running'] as const satisfies readonly RunStatus[];

/** States that hold a concurrency slot (a live workspace or one being made). */
export const SLOT_STATUSES = ['provisioning', 'running'] as const satisfies readonly RunStatus[];

export const FINAL_STATUSES = ['succeeded', 'failed', 'timed_out', 'cancelled', 'dead'] as const satisfies readonly RunStatus[];

export const TRANSITIONS: Readonly<Record<RunStatus, readonly RunStatus[]>> = {
  queued: ['provisioning', 'cancelled'],
  provisioning: ['running', 'queued', 'dead', 'cancelled', 'failed'],
  running: ['succeeded', 'failed', 'timed_out', 'cancelled'],
  succeeded: [],
  failed: ['queued'],
  timed_out: ['queued'],
  cancelled: ['queued'],
  dead: ['queued'],
};

export function isFinal(status: RunStatus): boolean {
  return (FINAL_STATUSES as readonly RunStatus[]).includes(status);
}

/**
 * Event names written to `run_events.type` and emitted to listeners. One per transition,
 * plus `run:progress` for log/usage batches and `run:followup` when a duplicate asks for a re-run.
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
  requeued: 'run:requeued',
  workspaceDeleted: 'workspace:deleted',
} as const;

export type RunEventType = (typeof RUN_EVENT)[keyof typeof RUN_EVENT];
