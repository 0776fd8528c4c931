import type { Updateable } from 'kysely';
import type { RunEventsTable, RunsTable } from '../store/index.js';
import type { RunEventType, RunStatus } from './states.js';
import { FORGES, type ForgeName } from './keys.js';
import type { Run, RunEvent } from './types.js';

/**
 * Columns a transition may set besides the ones it always sets itself (status, lease, times).
 * Typed by the table, so a misspelt column does not compile.
 */
export type RunPatch = Omit<Updateable<RunsTable>, 'id' | 'status' | 'lease_token' | 'lease_expires_at' | 'finished_at' | 'updated_at'>;

export type RunRow = { [K in keyof RunsTable]: RunsTable[K] extends import('kysely').Generated<infer T> ? T : RunsTable[K] };
export type RunEventRow = {
  [K in keyof RunEventsTable]: RunEventsTable[K] extends import('kysely').Generated<infer T> ? T : RunEventsTable[K];
};

export function toRun(row: RunRow): Run {
  const payload = parseJson<Run['payload']>(row.payload) ?? {};
  const forge = FORGES.includes(payload.forge as ForgeName) ? (payload.forge as ForgeName) : 'gitea';
  return {
    id: row.id,
    key: row.key,
    stage: row.stage,
    owner: row.owner,
    repo: row.repo,
    number: row.number,
    forge,
    status: row.status as RunStatus,
    payload,
    attempts: row.attempts,
    maxAttempts: row.max_attempts,
    runAt: row.run_at,
    workspaceName: row.workspace_name,
    workspaceId: row.workspace_id,
    followup: row.followup === 1,
    lastError: row.last_error,
    exitCode: row.exit_code,
    summary: row.summary,
    usage: parseJson(row.usage),
    costUsd: row.cost_usd,
    costSource: row.cost_source === 'reported' || row.cost_source === 'computed' ? row.cost_source : null,
    durationMs: row.duration_ms,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    claimedAt: row.claimed_at,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
    limits: { tokenCap: row.token_cap, maxDurationMs: row.max_duration_ms },
    heldReason: row.held_reason,
    agentAttempt: row.agent_attempt,
  };
}

export function toRunEvent(row: RunEventRow): RunEvent {
  return {
    id: row.id,
    runId: row.run_id,
    type: row.type as RunEventType,
    fromStatus: row.from_status as RunStatus | null,
    toStatus: row.to_status as RunStatus | null,
    data: parseJson(row.data),
    createdAt: row.created_at,
  };
}

/** JSON text of a column, or null when absent or unreadable (a row written by hand, an old version). */
export function parseJson<T>(text: string | null): T | null {
  if (text === null) return null;
  try {
    return JSON.parse(text) as T;
  } catch {
    return null;
  }
}
