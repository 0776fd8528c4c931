import { randomUUID } from 'node:crypto';
import { CompiledQuery, sql } from 'kysely';
import type { Store, StoreDialect, TransactionScope } from '../store/index.js';
import { claimValues, toWritten, type PostgresStatements } from './postgres-statements.js';
import { toRun } from './rows.js';
import { RUN_EVENT, RUN_STATUS, SLOT_STATUSES } from './states.js';
import { announceWritten, recordTransitions, runHooks, type TransitionContext } from './transition.js';
import type { ClaimedRun } from './types.js';

/**
 * The due queued runs in claim order, on SQLite. Without table statistics SQLite's planner prefers
 * `runs_status (status, id)` and sorts every queued run to find the first few (4 ms with 20,000
 * queued); `runs_queue (run_at, id) WHERE status = 'queued'` hands them over in order. `INDEXED BY`
 * makes that the plan, and a missing index an error rather than a slow claim.
 */
const SQLITE_CANDIDATES = `SELECT id, owner, repo FROM runs INDEXED BY runs_queue
WHERE status = '${RUN_STATUS.queued}' AND run_at <= ? ORDER BY run_at, id LIMIT ?`;

export interface ClaimLimits {
  concurrency: number;
  perRepositoryConcurrency: number;
  leaseMs: number;
}

function claimArguments(limits: Pick<ClaimLimits, 'concurrency' | 'leaseMs'>, max: number, now: number) {
  const leaseToken = randomUUID();
  return {
    leaseToken,
    values: claimValues({ now, max, concurrency: limits.concurrency, leaseToken, leaseExpiresAt: now + limits.leaseMs }),
  };
}

/**
 * A claim in one round trip (postgres-statements.ts `CLAIM`): for PostgreSQL when nothing has to
 * happen under the lock besides the claim itself and no hook writes in the claim's transaction.
 * It claims what `claimInTransaction` would, with the same lock.
 */
export function claimInOneTrip(
  store: Pick<Store, 'runStatement'>,
  ctx: TransitionContext,
  statements: Pick<PostgresStatements, 'claim'>,
  limits: Pick<ClaimLimits, 'concurrency' | 'leaseMs'>,
  max: number,
): Promise<ClaimedRun[]> {
  const now = ctx.now();
  const { leaseToken, values } = claimArguments(limits, max, now);
  return store.runStatement(statements.claim, values, (rows, scope) => {
    const written = rows.map(toWritten);
    announceWritten(scope, ctx, written);
    return written.map(({ run }) => ({ run, leaseToken }));
  });
}

/** `CLAIM` inside the caller's transaction, with the hooks. */
async function claimStatement(
  scope: TransactionScope,
  ctx: TransitionContext,
  statements: Pick<PostgresStatements, 'claim'>,
  limits: Pick<ClaimLimits, 'concurrency' | 'leaseMs'>,
  max: number,
  now: number,
): Promise<ClaimedRun[]> {
  const { leaseToken, values } = claimArguments(limits, max, now);
  const written = (await statements.claim.execute(scope.trx, values)).map(toWritten);
  await runHooks(scope, ctx, written);
  announceWritten(scope, ctx, written);
  return written.map(({ run }) => ({ run, leaseToken }));
}

/**
 * Claims due queued runs up to the free capacity, inside one transaction so two dispatchers can
 * never overshoot the limit. On PostgreSQL the dispatch_state row is locked FOR UPDATE: claims are
 * serialised (they are short, and each takes a whole batch), and the capacity count they read
 * cannot go stale before they commit. On SQLite the IMMEDIATE transaction already holds the single
 * writer lock.
 *
 * `statements` (PostgreSQL, postgres-statements.ts): the lock, the count, the pick, the update and
 * the events are one round trip (`CLAIM`); with a per-repository limit the lock is taken first and
 * the pick is made here. Either way the claim's COMMIT does not wait for the WAL flush (see there).
 *
 * `beforeClaim` runs under the lock, before the pick: the daily budgets hold and release runs there.
 */
export async function claimInTransaction(
  scope: TransactionScope,
  dialect: StoreDialect,
  ctx: TransitionContext,
  limits: ClaimLimits,
  max: number,
  statements?: Pick<PostgresStatements, 'claimLock' | 'claim'>,
  beforeClaim?: (scope: TransactionScope) => Promise<void>,
): Promise<ClaimedRun[]> {
  const { trx } = scope;
  const now = ctx.now();
  const perRepo = limits.perRepositoryConcurrency;
  if (statements && perRepo === 0 && !beforeClaim) return claimStatement(scope, ctx, statements, limits, max, now);

  const state = await lockDispatch(trx, dialect, statements);
  if (!state || state.paused === 1) return [];
  // Under the lock, so budgets are checked by one claim at a time across replicas (budget-holds.ts).
  if (beforeClaim) await beforeClaim(scope);
  // `CLAIM` takes the lock this transaction already holds, and claims under it.
  if (statements && perRepo === 0) return claimStatement(scope, ctx, statements, limits, max, now);

  const free = await freeSlots(trx, limits, max);
  if (free <= 0) return [];
  // With a per-repository limit some candidates may be skipped, so look a little further.
  let chosen = await dueCandidates(trx, dialect, now, perRepo > 0 ? free * 4 + 16 : free);
  if (perRepo > 0 && chosen.length > 0) chosen = await withinRepositoryLimit(trx, chosen, perRepo, free);
  if (chosen.length === 0) return [];
  return markClaimed(scope, ctx, limits, chosen, now);
}

type Trx = TransactionScope['trx'];
type Candidate = { id: number; owner: string; repo: string };

/** The `dispatch_state` row, locked: one claim at a time (PostgreSQL; SQLite's writer lock is already held). */
async function lockDispatch(
  trx: Trx,
  dialect: StoreDialect,
  statements: Pick<PostgresStatements, 'claimLock' | 'claim'> | undefined,
): Promise<{ paused: number } | undefined> {
  if (statements) return (await statements.claimLock.execute(trx, []))[0];
  let stateQuery = trx.selectFrom('dispatch_state').select('paused').where('id', '=', 1);
  if (dialect === 'postgres') stateQuery = stateQuery.forUpdate();
  return stateQuery.executeTakeFirst();
}

/** Slots left under the concurrency limit, at most `max`; counted under the lock. */
async function freeSlots(trx: Trx, limits: ClaimLimits, max: number): Promise<number> {
  const live = await trx
    .selectFrom('runs')
    .select(({ fn }) => fn.countAll<number>().as('n'))
    .where('status', 'in', SLOT_STATUSES)
    .executeTakeFirstOrThrow();
  return Math.min(max, limits.concurrency - Number(live.n));
}

/** The earliest due queued runs, at most `limit` (PostgreSQL: skipping runs another claim holds). */
async function dueCandidates(trx: Trx, dialect: StoreDialect, now: number, limit: number): Promise<Candidate[]> {
  if (dialect === 'sqlite') return (await trx.executeQuery(CompiledQuery.raw(SQLITE_CANDIDATES, [now, limit]))).rows as Candidate[];
  return trx
    .selectFrom('runs')
    .select(['id', 'owner', 'repo'])
    .where('status', '=', RUN_STATUS.queued)
    .where('run_at', '<=', now)
    .orderBy('run_at')
    .orderBy('id')
    .limit(limit)
    .forUpdate()
    .skipLocked()
    .execute();
}

/** The candidates whose repository has a slot left under `perRepo`, in order, at most `free`. */
async function withinRepositoryLimit(trx: Trx, chosen: Candidate[], perRepo: number, free: number): Promise<Candidate[]> {
  const busy = await trx
    .selectFrom('runs')
    .select(['owner', 'repo', ({ fn }) => fn.countAll<number>().as('n')])
    .where('status', 'in', SLOT_STATUSES)
    .groupBy(['owner', 'repo'])
    .execute();
  const inUse = new Map(busy.map((b) => [`${b.owner}/${b.repo}`, Number(b.n)]));
  const picked: Candidate[] = [];
  for (const c of chosen) {
    const repoKey = `${c.owner}/${c.repo}`;
    const used = inUse.get(repoKey) ?? 0;
    if (used >= perRepo) continue;
    inUse.set(repoKey, used + 1);
    picked.push(c);
    if (picked.length === free) break;
  }
  return picked;
}

/** The chosen runs to `provisioning` under one fresh lease, each with its `run:claimed` event. */
async function markClaimed(
  scope: TransactionScope,
  ctx: TransitionContext,
  limits: ClaimLimits,
  chosen: Candidate[],
  now: number,
): Promise<ClaimedRun[]> {
  const leaseToken = randomUUID();
  const rows = await scope.trx
    .updateTable('runs')
    .set({
      status: RUN_STATUS.provisioning,
      attempts: sql`attempts + 1`,
      lease_token: leaseToken,
      lease_expires_at: now + limits.leaseMs,
      claimed_at: now,
      updated_at: now,
    })
    .where(
      'id',
      'in',
      chosen.map((c) => c.id),
    )
    .where('status', '=', RUN_STATUS.queued)
    .returningAll()
    .execute();
  rows.sort((a, b) => a.run_at - b.run_at || a.id - b.id);
  const runs = rows.map(toRun);
  await recordTransitions(
    scope,
    ctx,
    runs.map((run) => ({ run, type: RUN_EVENT.claimed, from: RUN_STATUS.queued, data: { attempt: run.attempts } })),
  );
  return runs.map((run) => ({ run, leaseToken }));
}

/** Extends a claim's lease; false when it was lost (cancelled, completed, re-claimed elsewhere). */
export async function extendLease(
  store: Pick<Store, 'db'>,
  limits: Pick<ClaimLimits, 'leaseMs'>,
  now: number,
  runId: number,
  leaseToken: string,
): Promise<boolean> {
  const result = await store.db
    .updateTable('runs')
    .set({ lease_expires_at: now + limits.leaseMs, updated_at: now })
    .where('id', '=', runId)
    .where('status', '=', RUN_STATUS.provisioning)
    .where('lease_token', '=', leaseToken)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}
