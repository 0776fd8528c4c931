import {
  addUsage,
  blockingBudget,
  dayKey,
  hasBudgets,
  holdReason,
  nonNegative,
  parseScope,
  readBudgetDay,
  scopesOf,
  type BudgetsConfig,
  type BudgetStatus,
} from '../budgets/index.js';
import type { TransactionScope } from '../store/index.js';
import { toRun } from './rows.js';
import { RUN_EVENT, RUN_STATUS, type RunEventType, type RunStatus } from './states.js';
import { hookFor, recordTransitions, type TransitionContext } from './transition.js';
import { readConversation } from './conversation.js';
import type { Run, RunEvent, TransitionHook, Usage } from './types.js';
import { totalTokens } from './usage.js';

/** Events that carry what an agent reported at the end of an attempt (the callback's usage and cost). */
const REPORTED = new Set<RunEventType>([RUN_EVENT.succeeded, RUN_EVENT.failed, RUN_EVENT.timedOut]);
const FROM_WORKSPACE = new Set<RunStatus | null>([RUN_STATUS.provisioning, RUN_STATUS.running]);

export interface BudgetGate {
  /** Adds each completion's reported usage to today's budget rows, in the completion's transaction. */
  usageHook: TransitionHook;
  /**
   * Inside the claim's transaction, after its lock (so replicas take turns): releases held runs
   * whose budgets have room again, then holds the due queued runs whose budget is spent, before
   * the claim picks from what is still queued.
   */
  applyInClaim(scope: TransactionScope, ctx: TransitionContext): Promise<void>;
}

/**
 * What one attempt of the agent spent, by the event that ends it; null for an event that ends none.
 * Each turn of a conversation counts when it ends: a turn that asked when the run parks (its own
 * usage is on the `run:waiting` entry), so a waiting, expired or cancelled conversation has
 * counted what it spent, and the day sees it while a person thinks. The run's end then reports
 * the whole conversation (the run's record counts every turn), of which only what the turns
 * before did not count is added.
 */
async function spentBy(scope: TransactionScope, run: Run, event: RunEvent): Promise<{ tokens: number; costUsd: number } | null> {
  let usage: Usage | null;
  let cost: number | null;
  if (event.type === RUN_EVENT.waiting) {
    usage = (event.data?.usage as Usage | null) ?? null;
    cost = typeof event.data?.costUsd === 'number' ? event.data.costUsd : null;
    return { tokens: totalTokens(usage) ?? 0, costUsd: cost ?? 0 };
  }
  if (REPORTED.has(event.type)) ({ usage, costUsd: cost } = run);
  else if (event.type === RUN_EVENT.retrying && event.data?.agent === true) {
    // An attempt retried: what it used is on its timeline entry, not on the run.
    usage = (event.data.usage as Usage | null) ?? null;
    cost = typeof event.data.costUsd === 'number' ? event.data.costUsd : null;
  } else return null;
  // A resumed turn's report holds the turns before (routes-callbacks), which their parks counted.
  const before = run.agentAttempt > 1 ? await readConversation(scope.trx, run.id) : null;
  return {
    tokens: (totalTokens(usage) ?? 0) - (totalTokens(before?.usage ?? null) ?? 0),
    costUsd: (cost ?? 0) - (before?.costUsd ?? 0),
  };
}

/**
 * Daily budgets at the two points where they matter: usage is counted when agents report it
 * (durably, per day and scope, added in SQL so replicas never lose an increment), and the budget
 * is checked where runs start (the claim transaction), never earlier: a run held at enqueue time
 * would miss a raise that comes before its turn. Runs already provisioning or running are never
 * stopped by a budget; they finish and their usage counts.
 */
export function createBudgetGate(config: BudgetsConfig): BudgetGate {
  const active = hasBudgets(config);
  let leftovers = !active;

  return {
    usageHook: hookFor([...REPORTED, RUN_EVENT.retrying, RUN_EVENT.waiting], async (scope, { run, event }) => {
      if (!FROM_WORKSPACE.has(event.fromStatus)) return;
      const spent = await spentBy(scope, run, event);
      if (!spent) return;
      // Only non-negative amounts are added: a negative claim must never credit a budget.
      const tokens = nonNegative(spent.tokens);
      const costUsd = nonNegative(spent.costUsd);
      if (tokens <= 0 && costUsd <= 0) return;
      await addUsage(scope.trx, {
        day: dayKey(event.createdAt, config.timezone),
        scopes: scopesOf(run),
        tokens,
        costUsd,
        now: event.createdAt,
      });
    }),

    async applyInClaim(scope, ctx) {
      const { trx } = scope;
      const now = ctx.now();
      if (!active) {
        // No budget configured (any more): runs held under an earlier configuration go back to
        // the queue, once per process.
        if (leftovers) {
          leftovers = false;
          await release(scope, ctx, () => true);
        }
        return;
      }
      const day = await readBudgetDay(trx, config, now);
      await release(scope, ctx, (run) => !blockingBudget(day.budgets, run));

      const spent = [...day.budgets.values()].filter((b) => b.exhausted);
      if (spent.length === 0) return;
      let due = trx
        .selectFrom('runs')
        .select(['id', 'owner', 'repo', 'stage'])
        .where('status', '=', RUN_STATUS.queued)
        .where('run_at', '<=', now);
      if (!day.budgets.get('global')?.exhausted) {
        due = due.where((eb) =>
          eb.or(
            spent.map((b) => {
              const parsed = parseScope(b.scope)!;
              if (parsed.kind === 'stage') return eb('stage', '=', parsed.name!);
              const [owner, repo] = parsed.name!.split('/') as [string, string];
              return eb.and([eb('owner', '=', owner), eb('repo', '=', repo)]);
            }),
          ),
        );
      }
      const candidates = await due.orderBy('run_at').orderBy('id').execute();
      const resetsAt = `${dayKey(day.resetsAt, config.timezone)} 00:00 ${config.timezone}`;
      const byBudget = new Map<BudgetStatus, number[]>();
      for (const run of candidates) {
        const budget = blockingBudget(day.budgets, run);
        if (budget) byBudget.set(budget, [...(byBudget.get(budget) ?? []), run.id]);
      }
      for (const [budget, all] of byBudget) {
        const reason = holdReason(budget, resetsAt);
        await move(scope, ctx, all, {
          from: RUN_STATUS.queued,
          to: RUN_STATUS.held,
          heldReason: reason,
          updatedAt: now,
          type: RUN_EVENT.held,
          data: { scope: budget.scope, reason },
        });
      }
    },
  };
}

/** held → queued for the held runs `free` lets go, keeping their `run_at`: they start in their original order. */
async function release(
  scope: TransactionScope,
  ctx: TransitionContext,
  free: (run: { owner: string; repo: string; stage: string }) => boolean,
): Promise<void> {
  const { trx } = scope;
  const held = await trx.selectFrom('runs').select(['id', 'owner', 'repo', 'stage']).where('status', '=', RUN_STATUS.held).execute();
  await move(
    scope,
    ctx,
    held.filter(free).map((r) => r.id),
    {
      from: RUN_STATUS.held,
      to: RUN_STATUS.queued,
      heldReason: null,
      updatedAt: ctx.now(),
      type: RUN_EVENT.released,
      data: { reason: 'its daily budgets have room' },
    },
  );
}

/**
 * `from` → `to` for the runs of `ids` still in `from` (a run cancelled meanwhile, whose row lock
 * waited for us, is left alone), each recorded on its timeline, in the order they were queued.
 */
async function move(
  scope: TransactionScope,
  ctx: TransitionContext,
  ids: readonly number[],
  change: {
    from: RunStatus;
    to: RunStatus;
    heldReason: string | null;
    updatedAt: number;
    type: RunEventType;
    data: Record<string, unknown>;
  },
): Promise<void> {
  for (const chunk of chunks(ids)) {
    const rows = await scope.trx
      .updateTable('runs')
      .set({ status: change.to, held_reason: change.heldReason, updated_at: change.updatedAt })
      .where('id', 'in', chunk)
      .where('status', '=', change.from)
      .returningAll()
      .execute();
    rows.sort((a, b) => a.run_at - b.run_at || a.id - b.id);
    await recordTransitions(
      scope,
      ctx,
      rows.map((row) => ({ run: toRun(row), from: change.from, type: change.type, data: change.data })),
    );
  }
}

/** Id lists short enough for one statement's parameters on either database. */
function chunks(ids: readonly number[], size = 500): number[][] {
  const out: number[][] = [];
  for (let i = 0; i < ids.length; i += size) out.push(ids.slice(i, i + size));
  return out;
}
