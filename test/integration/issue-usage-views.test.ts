import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULTS } from '../../src/runs/index.js';
import {
  createRunEngine,
  createRunQueries,
  type RunService,
  type RunOutcome,
  type TaskRequest,
  type RunQueries,
} from '../../src/runs/index.js';
import { STORE_KINDS, type TestStore } from '../helpers/stores.js';

const available = Object.fromEntries(await Promise.all(STORE_KINDS.map(async (k) => [k.kind, await k.available()])));

const MIN = 60_000;
const DAY = 24 * 60 * MIN;
/** 2026-11-30 00:00 UTC. */
const NOV30 = Date.UTC(2026, 10, 30);

describe.each(STORE_KINDS)('issue and usage views on $kind', ({ kind, create }) => {
  let t: TestStore;
  let clock: number;
  let engine: RunService;
  let queries: RunQueries;

  beforeEach(async (ctx) => {
    if (!available[kind]) ctx.skip();
    t = await create();
    await t.store.migrate();
    clock = NOV30;
    engine = createRunEngine({ store: t.store, queue: { ...DEFAULTS.queue, concurrency: 5 }, now: () => clock, random: () => 1 });
    queries = createRunQueries({ store: t.store, concurrency: 5 });
  });
  afterEach(async () => {
    await t?.cleanup();
  });

  /** One run through the real transitions: queued at `queued`, running at `started`, ended at `finished`. */
  async function runThrough(
    task: Partial<TaskRequest> & Pick<TaskRequest, 'stage'>,
    times: { queued: number; started: number; finished: number },
    outcome: RunOutcome = { status: 'succeeded' },
  ): Promise<number> {
    clock = times.queued;
    const { run } = await engine.enqueue({ owner: 'acme', repo: 'app', number: 7, ...task });
    clock = times.started;
    const [claim] = await engine.claim(1);
    expect(claim?.run.id).toBe(run.id);
    await engine.recordWorkspace(run.id, claim!.leaseToken, { workspaceName: `ws-${run.id}`, callbackTokenHash: 'x' });
    await engine.markRunning(run.id, claim!.leaseToken, { workspaceId: `id-${run.id}` });
    clock = times.finished;
    await engine.complete(run.id, outcome);
    return run.id;
  }

  const pr = (number: number, headRef: string) => ({ number, payload: { isPull: true, headRef, title: `Change (#7)` } });

  it('follows an issue through its stages and its pull request, in order, with waits and sums', async () => {
    const t0 = NOV30 + 9 * 60 * MIN;
    const analyse = await runThrough(
      { stage: 'analyse' },
      { queued: t0, started: t0 + MIN, finished: t0 + 6 * MIN },
      { status: 'succeeded', usage: { inputTokens: 1000, outputTokens: 200 }, costUsd: 0.12 },
    );
    const develop = await runThrough(
      { stage: 'develop' },
      { queued: t0 + 60 * MIN, started: t0 + 62 * MIN, finished: t0 + 92 * MIN },
      { status: 'failed', error: 'tests failed', usage: { inputTokens: 5000, outputTokens: 900 }, costUsd: 0.8 },
    );
    const review = await runThrough(
      { stage: 'review-code', ...pr(12, 'feature/issue-7-retry') },
      { queued: t0 + 100 * MIN, started: t0 + 100 * MIN, finished: t0 + 110 * MIN },
      { status: 'succeeded', usage: { inputTokens: 300, outputTokens: 30 }, costUsd: 0.05 },
    );
    // Another issue's PR (issue-70) and another repository's run of #7 stay out.
    await runThrough({ stage: 'review-code', ...pr(13, 'feature/issue-70-other') }, { queued: t0, started: t0, finished: t0 + MIN });
    await runThrough({ stage: 'analyse', repo: 'web' }, { queued: t0, started: t0, finished: t0 + MIN });
    clock = t0 + 200 * MIN;
    const { run: queued } = await engine.enqueue({ stage: 'test', owner: 'acme', repo: 'app', ...pr(12, 'feature/issue-7-retry') });
    clock = t0 + 230 * MIN;

    const view = (await queries.issue({ owner: 'acme', repo: 'app', number: 7 }, clock))!;
    expect(view.runs.map((r) => [r.id, r.stage, r.number, r.status])).toEqual([
      [analyse, 'analyse', 7, 'succeeded'],
      [develop, 'develop', 7, 'failed'],
      [review, 'review-code', 12, 'succeeded'],
      [queued.id, 'test', 12, 'queued'],
    ]);
    expect(view.pullRequests).toEqual([{ number: 12, headRef: 'feature/issue-7-retry', title: 'Change (#7)' }]);
    expect(view.runs[1]).toMatchObject({
      queuedMs: 2 * MIN,
      durationMs: 30 * MIN,
      attempts: 1,
      tokens: 5900,
      costUsd: 0.8,
      lastError: 'tests failed',
    });
    expect(view.runs[3]).toMatchObject({ queuedMs: 30 * MIN, durationMs: null });
    expect(view.steps.map((s) => [s.stage, s.status, s.waitMs])).toEqual([
      ['analyse', 'succeeded', null],
      ['develop', 'failed', 54 * MIN],
      ['review-code', 'succeeded', 8 * MIN],
      ['test', 'queued', 90 * MIN],
    ]);
    expect(view.totals).toEqual({
      runs: 4,
      attempts: 3,
      queuedMs: MIN + 2 * MIN + 0 + 30 * MIN,
      durationMs: 5 * MIN + 30 * MIN + 10 * MIN,
      waitMs: (54 + 8 + 90) * MIN,
      elapsedMs: 230 * MIN,
      tokens: 1200 + 5900 + 330,
      costUsd: 0.97,
    });

    // The pull request's own view is just its runs; an issue without runs has no view.
    expect((await queries.issue({ owner: 'acme', repo: 'app', number: 12 }, clock))!.runs.map((r) => r.id)).toEqual([review, queued.id]);
    expect(await queries.issue({ owner: 'acme', repo: 'app', number: 99 }, clock)).toBeNull();
  });

  it('sums usage by UTC day over a range, its edges included, and by stage, repository and issue', async () => {
    const usage = (input: number, output: number, costUsd: number): RunOutcome => ({
      status: 'succeeded',
      usage: { inputTokens: input, outputTokens: output },
      costUsd,
    });
    const at = (finished: number) => ({ queued: finished - 2 * MIN, started: finished - MIN, finished });
    await runThrough({ stage: 'analyse' }, at(NOV30 - 1), usage(1, 1, 1)); // 29 Nov 23:59:59.999: before the range
    await runThrough({ stage: 'analyse' }, at(NOV30), usage(100, 10, 0.1)); // 30 Nov 00:00: first day
    await runThrough({ stage: 'develop' }, at(NOV30 + DAY - 1), usage(200, 20, 0.2)); // 30 Nov, last ms
    await runThrough({ stage: 'develop', number: 8 }, at(NOV30 + DAY), usage(300, 30, 0.3)); // 1 Dec 00:00
    await runThrough({ stage: 'develop', repo: 'web' }, at(NOV30 + 2 * DAY - 1), usage(400, 40, 0.4)); // 1 Dec, last ms
    await runThrough({ stage: 'test' }, at(NOV30 + 2 * DAY), usage(5, 5, 5)); // 2 Dec 00:00: after the range

    const range = { from: '2026-11-30', to: '2026-12-01' };
    const byDay = await queries.usage({ ...range, groupBy: 'day' });
    expect(byDay.groups.map((g) => [g.key, g.runs, g.tokens, g.costUsd])).toEqual([
      ['2026-11-30', 2, 330, 0.3],
      ['2026-12-01', 2, 770, 0.7],
    ]);
    expect(byDay.totals).toMatchObject({ runs: 4, tokens: 1100, inputTokens: 1000, outputTokens: 100, costUsd: 1 });

    const byStage = await queries.usage({ ...range, groupBy: 'stage' });
    expect(byStage.groups.map((g) => [g.key, g.runs, g.tokens])).toEqual([
      ['develop', 3, 990],
      ['analyse', 1, 110],
    ]);
    const byRepository = await queries.usage({ ...range, groupBy: 'repository' });
    expect(byRepository.groups.map((g) => [g.key, g.tokens])).toEqual([
      ['acme/app', 660],
      ['acme/web', 440],
    ]);
    const byIssue = await queries.usage({ ...range, groupBy: 'issue' });
    expect(byIssue.groups.map((g) => [g.key, g.tokens])).toEqual([
      ['acme/web#7', 440],
      ['acme/app#7', 330],
      ['acme/app#8', 330],
    ]);
  });
});
