import { describe, expect, it } from 'vitest';
import { buildUsageReport, daysBetween, parseUtcDay, type UsageRow } from './usage-report.js';

const day = (text: string) => parseUtcDay(text)!;

function row(over: Partial<UsageRow> & Pick<UsageRow, 'finishedAt'>): UsageRow {
  return { stage: 'develop', owner: 'acme', repo: 'app', number: 7, usage: { inputTokens: 100, outputTokens: 10 }, costUsd: 0.01, ...over };
}

describe('UTC days', () => {
  it('reads real dates only', () => {
    expect(parseUtcDay('2026-11-30')).toBe(Date.UTC(2026, 10, 30));
    expect(parseUtcDay('2026-02-30')).toBeNull();
    expect(parseUtcDay('2026-1-3')).toBeNull();
    expect(parseUtcDay('2026-11-30T00:00:00Z')).toBeNull();
    expect(daysBetween('2024-02-28', '2024-03-01')).toBe(3);
  });
});

describe('buildUsageReport', () => {
  it('counts a run on the UTC day it finished, edges included, and every day of the range', () => {
    const rows = [
      row({ finishedAt: day('2026-11-01') - 1 }), // 23:59:59.999 the day before: outside
      row({ finishedAt: day('2026-11-01') }), // 00:00 on the first day: inside
      row({ finishedAt: day('2026-11-03') - 1 }), // last ms of the 2nd
      row({ finishedAt: day('2026-11-03') + 86_400_000 - 1 }), // last ms of the last day: inside
      row({ finishedAt: day('2026-11-04') }), // 00:00 after the last day: outside
    ];
    const report = buildUsageReport({ from: '2026-11-01', to: '2026-11-03', groupBy: 'day' }, rows);
    expect(report.groups.map((g) => [g.key, g.runs])).toEqual([
      ['2026-11-01', 1],
      ['2026-11-02', 1],
      ['2026-11-03', 1],
    ]);
    expect(report.totals).toMatchObject({ runs: 3, tokens: 330, inputTokens: 300, outputTokens: 30, costUsd: 0.03 });
    expect([report.since, report.until]).toEqual([day('2026-11-01'), day('2026-11-04')]);
  });

  it('groups by stage, repository and issue, most tokens (then cost) first, and counts odd values as 0', () => {
    const t = day('2026-11-02') + 5;
    const rows = [
      row({ finishedAt: t, stage: 'analyse', usage: { inputTokens: 5, outputTokens: 5 } }),
      row({ finishedAt: t, stage: 'develop', number: 8 }),
      row({
        finishedAt: t,
        stage: 'develop',
        repo: 'web',
        usage: { inputTokens: 'many' as unknown as number, outputTokens: -3, cacheReadInputTokens: 7 },
      }),
      row({ finishedAt: t, stage: 'maintenance', number: null, usage: null, costUsd: null }),
    ];
    const q = { from: '2026-11-02', to: '2026-11-02' } as const;
    const byStage = buildUsageReport({ ...q, groupBy: 'stage' }, rows);
    expect(byStage.groups.map((g) => [g.key, g.runs, g.tokens])).toEqual([
      ['develop', 2, 110],
      ['analyse', 1, 10],
      ['maintenance', 1, 0],
    ]);
    expect(byStage.groups[0]!.cacheReadInputTokens).toBe(7);
    const byIssue = buildUsageReport({ ...q, groupBy: 'issue' }, rows);
    expect(byIssue.groups.map((g) => g.key)).toEqual(['acme/app#8', 'acme/app#7', 'acme/web#7', 'acme/app']);
    const byRepository = buildUsageReport({ ...q, groupBy: 'repository' }, rows);
    expect(byRepository.groups.map((g) => [g.key, g.runs])).toEqual([
      ['acme/app', 3],
      ['acme/web', 1],
    ]);
  });
});
