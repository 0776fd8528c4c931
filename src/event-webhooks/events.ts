import type { WebhookEventName } from './config-section.js';
import { RUN_EVENT, RUN_STATUS, type Run, type RunEvent, type RunEventType } from '../runs/index.js';

/**
 * Which run_events become which outbound webhook event. Operator re-queues (`run:requeued`) and
 * held runs released by their budgets (`run:released`) are announced as `run.queued`; a run that used up its provisioning attempts (`run:dead`) as
 * `run.failed` with `run.status: "dead"`. Claims, coalesced duplicates and teardowns are internal.
 */
export const WEBHOOK_EVENT_OF: Readonly<Partial<Record<RunEventType, WebhookEventName>>> = {
  [RUN_EVENT.queued]: 'run.queued',
  [RUN_EVENT.requeued]: 'run.queued',
  [RUN_EVENT.held]: 'run.held',
  [RUN_EVENT.released]: 'run.queued',
  [RUN_EVENT.started]: 'run.started',
  [RUN_EVENT.progress]: 'run.progress',
  [RUN_EVENT.retrying]: 'run.retrying',
  [RUN_EVENT.succeeded]: 'run.succeeded',
  [RUN_EVENT.failed]: 'run.failed',
  [RUN_EVENT.dead]: 'run.failed',
  [RUN_EVENT.cancelled]: 'run.cancelled',
  [RUN_EVENT.timedOut]: 'run.timed_out',
};

/** The JSON body receivers get. `id` is stable across retries of one event (receivers dedupe on it). */
export interface WebhookBody {
  id: string;
  event: WebhookEventName;
  /** ISO 8601 time of the transition. */
  occurredAt: string;
  run: {
    id: number;
    key: string;
    stage: string;
    owner: string;
    repo: string;
    number: number | null;
    status: string;
    attempts: number;
    workspaceName: string | null;
    summary: string | null;
    error: string | null;
    usage: Run['usage'];
    costUsd: number | null;
    durationMs: number | null;
  };
  /** The event's details: `{ lines, usage?, costUsd? }` for progress, `{ error }`, `{ reason }`, … */
  data: Record<string, unknown> | null;
}

export function webhookEventOf(event: RunEvent): WebhookEventName | null {
  return WEBHOOK_EVENT_OF[event.type] ?? null;
}

export function webhookBody(name: WebhookEventName, event: RunEvent, run: Run): WebhookBody {
  return {
    id: `evt_${event.id}`,
    event: name,
    occurredAt: new Date(event.createdAt).toISOString(),
    run: {
      id: run.id,
      key: run.key,
      stage: run.stage,
      owner: run.owner,
      repo: run.repo,
      number: run.number,
      status: run.status,
      attempts: run.attempts,
      workspaceName: run.workspaceName,
      summary: run.summary,
      error: run.status === RUN_STATUS.succeeded ? null : run.lastError,
      usage: run.usage,
      costUsd: run.costUsd,
      durationMs: run.durationMs,
    },
    data: event.data,
  };
}
