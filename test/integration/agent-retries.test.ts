import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BACKOFF } from '../../src/background/index.js';
import { DEFAULTS, type QueueConfig } from '../../src/runs/index.js';
import type { ForgeAccounts } from '../../src/forge/index.js';
import { createStatusCommentHook } from '../../src/outbox/index.js';
import {
  createBudgetService,
  createRunEngine,
  createRunQueries,
  type RunQueries,
  type RunService,
  type Run,
  type RunOutcome,
} from '../../src/runs/index.js';
import { workspaceName } from '../../src/server/workspaces.js';
import { STORE_KINDS, type TestStore } from '../helpers/stores.js';

const available = Object.fromEntries(await Promise.all(STORE_KINDS.map(async (k) => [k.kind, await k.available()])));

describe.each(STORE_KINDS)('retries of agent runs on $kind', ({ kind, create }) => {
  let t: TestStore;
  let clock: number;
  let engine: RunService;
  let runs: RunQueries;
  let comments: string[];
  const queue: QueueConfig = { ...DEFAULTS.queue, concurrency: 4 };
  const budgets = { timezone: 'UTC', global: { tokens: 1_000_000 }, repositories: {}, stages: {} };

  beforeEach(async (ctx) => {
    if (!available[kind]) ctx.skip();
    t = await create();
    await t.store.migrate();
    clock = Date.UTC(2026, 11, 1, 9);
    comments = [];
    // The status comment hook as the app wires it, with an outbox that records what it is given.
    const hook = createStatusCommentHook({
      accounts: { dev: {} } as unknown as ForgeAccounts,
      outbox: {
        enqueue: async (_scope, entry) => {
          comments.push((entry.payload as { body: string }).body.split('\n')[0]!);
          return 0 as never;
        },
      },
    });
    engine = createRunEngine({
      store: t.store,
      queue,
      now: () => clock,
      random: () => 1,
      hooks: [hook],
      budgets,
      retries: { attemptsFor: (stage) => (stage === 'review-code' ? 2 : 3) },
    });
    runs = createRunQueries({ store: t.store, concurrency: queue.concurrency });
  });
  afterEach(async () => {
    await t?.cleanup();
  });

  /** Claims the run once due and brings it up in a workspace named as the app names it. */
  async function startAttempt(runId: number): Promise<Run> {
    const run = (await runs.get(runId))!;
    clock = Math.max(clock, run.runAt);
    const [claim] = await engine.claim();
    expect(claim?.run.id).toBe(runId);
    const name = workspaceName(claim!.run);
    await engine.recordWorkspace(runId, claim!.leaseToken, { workspaceName: name, callbackTokenHash: 'x' });
    return engine.markRunning(runId, claim!.leaseToken, { workspaceId: `id-${name}` });
  }

  const failWith = (error: string, tokens = 100): RunOutcome => ({
    status: 'failed',
    exitCode: 1,
    error,
    summary: `agent reported an error: ${error}`,
    usage: { inputTokens: tokens, outputTokens: 0 },
    costUsd: 0.01,
  });

  it.each(['agent_overloaded', 'agent_rate_limited', 'agent_unreachable', 'runner_terminated', 'workspace_lost'])(
    'retries %s with backoff in a fresh workspace until the stage’s attempts are used, then fails once',
    async (error) => {
      const { run } = await engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 3 });
      const names: string[] = [];
      for (let attempt = 1; attempt <= 3; attempt++) {
        const running = await startAttempt(run.id);
        expect(running.agentAttempt).toBe(attempt);
        names.push(running.workspaceName!);
        const before = clock;
        const { run: after } = await engine.complete(run.id, failWith(error));
        if (attempt < 3) {
          expect(after).toMatchObject({ status: 'queued', agentAttempt: attempt + 1, attempts: 0, workspaceName: null, usage: null });
          // BACKOFF.agentRun with the jitter at its top (random = 1): the full doubling.
          expect(after.runAt - before).toBe(Math.min(BACKOFF.agentRun.maxMs, BACKOFF.agentRun.baseMs * 2 ** (attempt - 1)));
          // Not before its backoff has passed.
          expect(await engine.claim()).toEqual([]);
        } else {
          expect(after).toMatchObject({ status: 'failed', lastError: error, agentAttempt: 3 });
        }
      }
      expect(new Set(names).size).toBe(3);

      const timeline = await runs.events(run.id);
      const retrying = timeline.filter((e) => e.type === 'run:retrying');
      expect(retrying.map((e) => [e.fromStatus, e.toStatus, e.data?.attempt, e.data?.attempts, e.data?.error])).toEqual([
        ['running', 'queued', 1, 3, error],
        ['running', 'queued', 2, 3, error],
      ]);
      expect(timeline.filter((e) => e.type === 'run:started')).toHaveLength(3);
      // The issue hears of the run once per outcome: queued, started, failed, not once per attempt.
      expect(comments).toEqual([
        '⏳ **develop** is queued (run 1).'.replace('1', String(run.id)),
        expect.stringContaining('🚀'),
        expect.stringContaining('❌'),
      ]);
      // Every attempt's usage counts against the budgets.
      const overview = await createBudgetService({ store: t.store, config: budgets, wake: () => {} }).overview(clock);
      expect(overview.budgets[0]!.tokens!.used).toBe(300);
    },
  );

  it.each(['clone_unavailable', 'setup_unavailable'])(
    'retries %s (the forge or the disk, before the agent ran) at the queue’s pace in a fresh workspace',
    async (error) => {
      const { run } = await engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 6 });
      const names: string[] = [];
      for (let attempt = 1; attempt <= 2; attempt++) {
        const running = await startAttempt(run.id);
        names.push(running.workspaceName!);
        const before = clock;
        const { run: after } = await engine.complete(run.id, failWith(error, 0));
        expect(after).toMatchObject({ status: 'queued', agentAttempt: attempt + 1, lastError: error });
        // Three times the queue's base delay, doubling (jitter at its top): seconds, not the agent API's minutes.
        expect(after.runAt - before).toBe(Math.min(queue.backoffMaxMs, queue.backoffBaseMs * 3 * 2 ** (attempt - 1)));
      }
      const last = await startAttempt(run.id);
      names.push(last.workspaceName!);
      expect((await engine.complete(run.id, { status: 'succeeded', exitCode: 0, summary: 'done' })).run.status).toBe('succeeded');
      expect(new Set(names).size).toBe(3);
      const retrying = (await runs.events(run.id)).filter((e) => e.type === 'run:retrying');
      expect(retrying.map((e) => e.data?.error)).toEqual([error, error]);
    },
  );

  it.each(['agent_error', 'token_cap', 'command_file_invalid', 'no_turns', 'clone_failed'])(
    'fails %s at once, without a retry',
    async (error) => {
      const { run } = await engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 4 });
      await startAttempt(run.id);
      const { run: after } = await engine.complete(run.id, failWith(error));
      expect(after).toMatchObject({ status: 'failed', lastError: error, agentAttempt: 1 });
      expect((await runs.events(run.id)).some((e) => e.type === 'run:retrying')).toBe(false);
    },
  );

  it('takes the stage’s own number of attempts, and a success after a retry comments once', async () => {
    const { run } = await engine.enqueue({ stage: 'review-code', owner: 'acme', repo: 'app', number: 5 });
    await startAttempt(run.id);
    expect((await engine.complete(run.id, failWith('agent_overloaded'))).run.status).toBe('queued');
    await startAttempt(run.id);
    expect((await engine.complete(run.id, failWith('agent_overloaded'))).run).toMatchObject({ status: 'failed', agentAttempt: 2 });

    comments = [];
    const { run: other } = await engine.enqueue({ stage: 'develop', owner: 'acme', repo: 'app', number: 6 });
    await startAttempt(other.id);
    await engine.complete(other.id, failWith('agent_rate_limited'));
    await startAttempt(other.id);
    const done = await engine.complete(other.id, { status: 'succeeded', summary: 'done', usage: { inputTokens: 5, outputTokens: 5 } });
    expect(done.run).toMatchObject({ status: 'succeeded', agentAttempt: 2, usage: { inputTokens: 5, outputTokens: 5 } });
    expect(comments).toEqual([expect.stringContaining('⏳'), expect.stringContaining('🚀'), expect.stringContaining('✅')]);
  });

  it('starts an operator’s retry of a failed run from its first attempt', async () => {
    const { run } = await engine.enqueue({ stage: 'review-code', owner: 'acme', repo: 'app', number: 7 });
    await startAttempt(run.id);
    await engine.complete(run.id, failWith('agent_unreachable'));
    await startAttempt(run.id);
    await engine.complete(run.id, failWith('agent_unreachable'));
    expect((await engine.retry(run.id)).agentAttempt).toBe(1);
  });
});
