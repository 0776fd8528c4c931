import type { Selectable } from 'kysely';
import type { OutboxTable } from './table.js';
import type { OutboxEntry, OutboxStatus } from './types.js';

export function toEntry(row: Selectable<OutboxTable>): OutboxEntry {
  return {
    id: row.id,
    kind: row.kind,
    orderingKey: row.ordering_key,
    dedupKey: row.dedup_key,
    runId: row.run_id,
    payload: parseJson(row.payload),
    status: row.status as OutboxStatus,
    attempts: row.attempts,
    maxAttempts: row.max_attempts,
    nextAttemptAt: row.next_attempt_at,
    lastError: row.last_error,
    result: row.result === null ? null : parseJson(row.result),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    deliveredAt: row.delivered_at,
  };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    // Kept visible rather than thrown: one corrupt row must not stop the worker.
    return { unparsable: text };
  }
}
