import { sql, type Kysely } from 'kysely';
import type { Database, StoreDialect, TransactionScope } from '../store/index.js';
import { RUN_EVENT } from './states.js';
import { recordEvent, type TransitionContext } from './transition.js';
import type { Run, RunEvent, Usage } from './types.js';

/**
 * What the database keeps of a run's log: its `run:progress` events. An agent can print any
 * amount (a 50 MB burst once left 4.6-19 MB of events per run), so the rows a run may hold are
 * bounded: the first half of the budget (how the run started: clone, setup, the agent's first
 * steps) and the last half (how it ended) are kept, and the events in between are replaced by one
 * marker event that says how many lines and bytes were cut. The full log stays in the workspace
 * (`.baton/agent.log`) while it lives.
 *
 * Layout of a run's progress events, by id: [head …] [marker] [tail …]. Until the first cut
 * there is no marker; the head is then the longest prefix that fits half the budget. Each new
 * batch is appended to the tail and the oldest tail events are cut until the run fits again; the
 * first event cut becomes the marker (it sits exactly between head and tail).
 */

export interface RunLogLimits {
  /** Bytes of progress events kept per run (their JSON), head and tail half each. */
  maxBytes: number;
}

/** 2 MiB per run: thousands of lines at each end, small next to the run's other rows. */
export const DEFAULT_RUN_LOG_MAX_BYTES = 2 * 1024 * 1024;
/** Below this a single batch could not be kept whole (batches are at most 1 MiB). */
export const MIN_RUN_LOG_MAX_BYTES = 64 * 1024;

export interface ProgressBatch {
  lines: string[];
  usage?: Usage;
  costUsd?: number;
  /**
   * The prompt the agent got: recorded as a `run:prompt` event of its own, outside the log's
   * budget (a run has one, bounded by the callback route), so trimming the log never cuts it.
   */
  prompt?: Record<string, unknown>;
}

export interface ProgressAppended {
  event: RunEvent;
  /** Lines and bytes removed from the stored log by this batch (older tail events, or its own first lines). */
  cut: { lines: number; bytes: number };
}

/** The data of the marker event: `cut` first, so the marker is told from a batch by its first bytes. */
interface MarkerData {
  cut: { lines: number; bytes: number };
  lines: string[];
}
const MARKER_PREFIX = '{"cut":{';

/**
 * Appends one progress batch to `run`'s log within the limits, inside the caller's transaction
 * (the run row is locked by the caller, so two batches of one run never interleave).
 */
export async function appendProgressInTransaction(
  scope: TransactionScope,
  ctx: TransitionContext,
  run: Run,
  batch: ProgressBatch,
  limits: RunLogLimits,
  dialect: StoreDialect,
): Promise<ProgressAppended> {
  const { trx } = scope;
  if (batch.prompt) await recordEvent(scope, ctx, run, RUN_EVENT.prompt, batch.prompt);
  const headBudget = Math.floor(limits.maxBytes / 2);
  const { data, cut } = fitBatch(batch, limits.maxBytes - headBudget);
  const size = Buffer.byteLength(JSON.stringify(data));

  const bytes = dialect === 'postgres' ? sql<number>`octet_length(data)` : sql<number>`length(CAST(data AS BLOB))`;
  const ofRun = trx.selectFrom('run_events').where('run_id', '=', run.id).where('type', '=', RUN_EVENT.progress);
  // The common case, a log that still fits, needs only its size.
  const stored = await ofRun.select(sql<number>`COALESCE(SUM(${bytes}), 0)`.as('total')).executeTakeFirst();
  if (Number(stored?.total ?? 0) + size <= limits.maxBytes) {
    if (cut.lines > 0) await recordCut(trx, run.id, await markerId(trx, run.id), [], cut, limits);
    const event = await recordEvent(scope, ctx, run, RUN_EVENT.progress, data as unknown as Record<string, unknown>);
    return { event, cut: { ...cut } };
  }
  const rows = (
    await trx
      .selectFrom('run_events')
      .select([
        'id',
        bytes.as('size'),
        sql<number>`CASE WHEN substr(data, 1, ${MARKER_PREFIX.length}) = ${MARKER_PREFIX} THEN 1 ELSE 0 END`.as('marker'),
      ])
      .where('run_id', '=', run.id)
      .where('type', '=', RUN_EVENT.progress)
      .orderBy('id')
      .execute()
  ).map((r) => ({ id: Number(r.id), size: Number(r.size ?? 0), marker: Number(r.marker) === 1 }));

  const markerIndex = rows.findIndex((r) => r.marker);
  let headEnd = markerIndex;
  if (markerIndex === -1) {
    let used = 0;
    headEnd = 0;
    while (headEnd < rows.length && used + rows[headEnd]!.size <= headBudget) used += rows[headEnd++]!.size;
  }
  const tail = rows.slice(markerIndex === -1 ? headEnd : markerIndex + 1);
  let total = rows.reduce((sum, r) => sum + r.size, 0) + size;
  const removed: typeof rows = [];
  while (total > limits.maxBytes && tail.length > 0) {
    const row = tail.shift()!;
    removed.push(row);
    total -= row.size;
  }

  if (removed.length > 0) {
    const texts = await trx
      .selectFrom('run_events')
      .select('data')
      .where(
        'id',
        'in',
        removed.map((r) => r.id),
      )
      .execute();
    for (const { data: text } of texts) {
      const lines = linesOf(text);
      cut.lines += lines.length;
      cut.bytes += lines.reduce((sum, line) => sum + Buffer.byteLength(line) + 1, 0);
    }
  }
  if (removed.length > 0 || cut.lines > 0)
    await recordCut(trx, run.id, markerIndex === -1 ? null : rows[markerIndex]!.id, removed, cut, limits);

  const event = await recordEvent(scope, ctx, run, RUN_EVENT.progress, data as unknown as Record<string, unknown>);
  return { event, cut: { ...cut } };
}

async function markerId(trx: Kysely<Database>, runId: number): Promise<number | null> {
  const row = await trx
    .selectFrom('run_events')
    .select('id')
    .where('run_id', '=', runId)
    .where('type', '=', RUN_EVENT.progress)
    .where(sql<boolean>`substr(data, 1, ${MARKER_PREFIX.length}) = ${MARKER_PREFIX}`)
    .executeTakeFirst();
  return row ? Number(row.id) : null;
}

/** Adds this batch's cut to the marker (making one of the first removed event if there is none) and deletes the rest. */
async function recordCut(
  trx: Kysely<Database>,
  runId: number,
  markerId: number | null,
  removed: readonly { id: number }[],
  cut: { lines: number; bytes: number },
  limits: RunLogLimits,
): Promise<void> {
  let target = markerId;
  let total = { ...cut };
  if (target !== null) {
    const row = await trx.selectFrom('run_events').select('data').where('id', '=', target).executeTakeFirst();
    const before = (JSON.parse(row?.data ?? '{}') as Partial<MarkerData>).cut;
    if (before) total = { lines: before.lines + cut.lines, bytes: before.bytes + cut.bytes };
  } else if (removed.length > 0) {
    target = removed[0]!.id;
  }
  const marker: MarkerData = { cut: total, lines: [markerLine(total, limits)] };
  const rest = removed.filter((r) => r.id !== target).map((r) => r.id);
  if (rest.length > 0) await trx.deleteFrom('run_events').where('id', 'in', rest).execute();
  if (target !== null) {
    await trx
      .updateTable('run_events')
      .set({ data: JSON.stringify(marker) })
      .where('id', '=', target)
      .where('run_id', '=', runId)
      .execute();
  }
  // With no event to turn into the marker (the batch's own first lines were cut), the batch says so itself.
}

function markerLine(cut: { lines: number; bytes: number }, limits: RunLogLimits): string {
  return (
    `[baton] … ${cut.lines.toLocaleString('en-US')} lines (${formatBytes(cut.bytes)}) of output are not stored here: ` +
    `the database keeps the first and last ${formatBytes(Math.floor(limits.maxBytes / 2))} of a run's log ` +
    `(runLog.maxBytes); the whole log is in the workspace's .baton/agent.log while it exists`
  );
}

/**
 * The batch as it will be stored: when it alone is larger than the tail budget, its last lines
 * that fit are kept, after a line saying how many came before.
 */
function fitBatch(batch: ProgressBatch, budget: number): { data: ProgressBatch; cut: { lines: number; bytes: number } } {
  const data: ProgressBatch = { lines: batch.lines };
  if (batch.usage) data.usage = batch.usage;
  if (batch.costUsd !== undefined) data.costUsd = batch.costUsd;
  const cut = { lines: 0, bytes: 0 };
  const size = Buffer.byteLength(JSON.stringify(data));
  if (size <= budget) return { data, cut };
  // Room for the notice line; each kept line costs its JSON form and a comma.
  let room = budget - (size - Buffer.byteLength(JSON.stringify(batch.lines))) - 400;
  let first = batch.lines.length;
  while (first > 0) {
    const cost = Buffer.byteLength(JSON.stringify(batch.lines[first - 1])) + 1;
    if (cost > room) break;
    room -= cost;
    first -= 1;
  }
  for (const line of batch.lines.slice(0, first)) {
    cut.lines += 1;
    cut.bytes += Buffer.byteLength(line) + 1;
  }
  data.lines = [
    `[baton] … ${cut.lines.toLocaleString('en-US')} lines (${formatBytes(cut.bytes)}) of this batch are not stored here; the whole log is in the workspace's .baton/agent.log`,
    ...batch.lines.slice(first),
  ];
  return { data, cut };
}

function linesOf(text: string | null): string[] {
  try {
    const lines = (JSON.parse(text ?? '{}') as { lines?: unknown }).lines;
    return Array.isArray(lines) ? lines.filter((l): l is string => typeof l === 'string') : [];
  } catch {
    return [];
  }
}

function formatBytes(bytes: number): string {
  if (bytes >= 1024 * 1024) return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
  if (bytes >= 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${bytes} bytes`;
}
