import { describe, expect, it } from 'vitest';
import { branchNamesIssue, buildIssueView } from './issue-view.js';
import type { Run } from './types.js';

const MIN = 60_000;

function run(over: Partial<Run> & Pick<Run, 'id' | 'stage' | 'createdAt'>): Run {
  return {
    key: `${over.stage}-acme-app-${over.number ?? 7}`,
    owner: 'acme',
    repo: 'app',
    number: 7,
    status: 'succeeded',
    payload: {},
    attempts: 1,
    maxAttempts: 3,
    runAt: over.createdAt,
    workspaceName: null,
    workspaceId: null,
    followup: false,
    lastError: null,
    exitCode: 0,
    summary: null,
    usage: null,
    costUsd: null,
    durationMs: null,
    updatedAt: over.createdAt,
    claimedAt: null,
    startedAt: null,
    finishedAt: null,
    limits: { tokenCap: null, maxDurationMs: null },
    heldReason: null,
    agentAttempt: 1,
    ...over,
  };
}

describe('branchNamesIssue', () => {
  it('links the branches the develop and fix-bug prompts create, and nothing that only looks alike', () => {
    expect(branchNamesIssue('feature/issue-42-retry-webhooks', 42)).toBe(true);
    expect(branchNamesIssue('fix/issue-42-null-label', 42)).toBe(true);
    expect(branchNamesIssue('issue-42', 42)).toBe(true);
    expect(branchNamesIssue('feature/issue-420-other', 42)).toBe(false);
    expect(branchNamesIssue('feature/reissue-42-x', 42)).toBe(false);
    expect(branchNamesIssue('release/v1.2.0', 42)).toBe(false);
  });
});

describe('buildIssueView', () => {
  const t0 = 1_700_000_000_000;

  it('orders runs by when they were queued, groups consecutive stages, and measures waits and sums', () => {
    const runs = [
      // Given out of order on purpose.
      run({
        id: 3,
        stage: 'review-code',
        number: 12,
        createdAt: t0 + 70 * MIN,
        startedAt: t0 + 71 * MIN,
        finishedAt: t0 + 80 * MIN,
        usage: { inputTokens: 100, outputTokens: 50 },
        costUsd: 0.1,
        payload: { headRef: 'feature/issue-7-x', title: 'Retry (#7)' },
      }),
      run({
        id: 1,
        stage: 'analyse',
        createdAt: t0,
        startedAt: t0 + 1 * MIN,
        finishedAt: t0 + 5 * MIN,
        usage: { inputTokens: 1000, outputTokens: 200 },
        costUsd: 0.2,
      }),
      run({
        id: 2,
        stage: 'develop',
        createdAt: t0 + 65 * MIN,
        startedAt: t0 + 66 * MIN,
        finishedAt: t0 + 75 * MIN,
        attempts: 2,
        usage: { inputTokens: 3000, outputTokens: 700 },
        costUsd: 0.7,
      }),
      run({
        id: 4,
        stage: 'review-code',
        number: 12,
        createdAt: t0 + 90 * MIN,
        startedAt: t0 + 92 * MIN,
        finishedAt: t0 + 100 * MIN,
        usage: { inputTokens: 10, outputTokens: 5 },
        costUsd: 0.01,
        payload: { headRef: 'feature/issue-7-x' },
      }),
    ];
    const view = buildIssueView({ owner: 'acme', repo: 'app', number: 7 }, runs, t0 + 200 * MIN);
    expect(view.runs.map((r) => r.id)).toEqual([1, 2, 3, 4]);
    expect(view.runs.map((r) => r.pullRequest)).toEqual([false, false, true, true]);
    expect(view.pullRequests).toEqual([{ number: 12, headRef: 'feature/issue-7-x', title: 'Retry (#7)' }]);
    expect(view.steps.map((s) => [s.stage, s.runIds, s.waitMs])).toEqual([
      ['analyse', [1], null],
      ['develop', [2], 60 * MIN],
      // Queued before develop ended: no wait.
      ['review-code', [3, 4], 0],
    ]);
    expect(view.steps[2]).toMatchObject({
      queuedMs: 3 * MIN,
      durationMs: 17 * MIN,
      tokens: 165,
      costUsd: 0.11,
      finishedAt: t0 + 100 * MIN,
    });
    expect(view.totals).toEqual({
      runs: 4,
      attempts: 5,
      queuedMs: 5 * MIN,
      durationMs: 4 * MIN + 9 * MIN + 9 * MIN + 8 * MIN,
      waitMs: 60 * MIN,
      elapsedMs: 100 * MIN,
      tokens: 1200 + 3700 + 150 + 15,
      costUsd: 1.01,
    });
  });

  it('counts a live run up to now, and leaves its duration and its step’s end open', () => {
    const view = buildIssueView(
      { owner: 'acme', repo: 'app', number: 7 },
      [
        run({ id: 1, stage: 'analyse', createdAt: t0, startedAt: t0 + MIN, finishedAt: t0 + 2 * MIN }),
        run({ id: 2, stage: 'develop', status: 'queued', attempts: 0, createdAt: t0 + 10 * MIN }),
      ],
      t0 + 30 * MIN,
    );
    expect(view.runs[1]).toMatchObject({ queuedMs: 20 * MIN, durationMs: null, startedAt: null });
    expect(view.steps[1]).toMatchObject({ status: 'queued', finishedAt: null, waitMs: 8 * MIN });
    expect(view.totals.elapsedMs).toBe(30 * MIN);
  });

  it('takes the claim as the start of a run that called back while provisioning', () => {
    const view = buildIssueView(
      { owner: 'acme', repo: 'app', number: 7 },
      [run({ id: 1, stage: 'analyse', createdAt: t0, claimedAt: t0 + MIN, finishedAt: t0 + 3 * MIN })],
      t0 + 10 * MIN,
    );
    expect(view.runs[0]).toMatchObject({ startedAt: t0 + MIN, queuedMs: MIN, durationMs: 2 * MIN });
  });
});
