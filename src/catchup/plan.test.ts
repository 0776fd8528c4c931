import { describe, expect, it } from 'vitest';
import type { ForgeTimelineEvent } from '../forge/index.js';
import { mayHaveNews, planItem, type CatchupItem } from './plan.js';

const WINDOW = Date.parse('2026-03-01T10:00:00Z');
const before = '2026-03-01T09:00:00Z';
const inside = '2026-03-01T10:05:00Z';

const issue = (labels: string[], extra: Partial<CatchupItem> = {}): CatchupItem => ({
  number: 6,
  isPull: false,
  state: 'open',
  merged: false,
  title: 't',
  htmlUrl: 'h',
  author: 'alice',
  labels,
  createdAt: before,
  updatedAt: inside,
  ...extra,
});
const pull = (sha: string, extra: Partial<CatchupItem> = {}) => issue([], { isPull: true, head: { ref: 'feature', sha }, ...extra });

let nextId = 1;
const added = (label: string, user: string, createdAt = inside): ForgeTimelineEvent => ({
  id: nextId++,
  kind: 'label_added',
  type: 'label',
  user,
  label,
  createdAt,
});
const pushed = (user: string, createdAt = inside): ForgeTimelineEvent => ({
  id: nextId++,
  kind: 'pull_push',
  type: 'pull_push',
  user,
  createdAt,
});

describe('catch-up plan', () => {
  it('a label missing from memory is one event, sent by whoever added it, carrying the labels as they were then', () => {
    const plan = planItem(
      issue(['bug', 'ready-for-development']),
      { labels: ['bug'], head: null },
      [added('ready-for-development', 'carol')],
      WINDOW,
    );
    expect(plan.events).toEqual([
      { kind: 'labels', sender: 'carol', labels: ['bug', 'ready-for-development'], entryId: expect.any(Number) },
    ]);
    expect(plan.seedLabels).toBeUndefined();
  });

  it('several new labels are replayed in the order they were added, each by its own sender', () => {
    const plan = planItem(issue(['a', 'b', 'c']), { labels: ['c'], head: null }, [added('b', 'bob'), added('a', 'claude-dev')], WINDOW);
    expect(plan.events.map((e) => [e.sender, e.labels])).toEqual([
      ['bob', ['b', 'c']],
      ['claude-dev', ['a', 'b', 'c']],
    ]);
  });

  it('on an issue never seen, only labels added inside the window are new; the older ones are seeded as seen', () => {
    const plan = planItem(
      issue(['old', 'new']),
      { labels: null, head: null },
      [added('old', 'alice', before), added('new', 'alice')],
      WINDOW,
    );
    expect(plan.events).toEqual([expect.objectContaining({ labels: ['old', 'new'], sender: 'alice' })]);
    expect(plan.seedLabels).toEqual(['old']);
    expect(planItem(issue(['old']), { labels: null, head: null }, [added('old', 'alice', before)], WINDOW).events).toEqual([]);
  });

  it('labels already remembered (any case), closed items and unattributable labels start nothing', () => {
    expect(mayHaveNews(issue(['Bug']), { labels: ['bug'], head: null })).toBe(false);
    expect(mayHaveNews(issue(['bug'], { state: 'closed' }), { labels: [], head: null })).toBe(false);
    const plan = planItem(issue(['bug']), { labels: [], head: null }, [], WINDOW);
    expect(plan.events).toEqual([]);
    expect(plan.skipped[0]).toMatch(/label "bug" on #6 is new but the timeline names no one/);
  });

  it('a pull request opened inside the window is one opened event by its author', () => {
    const plan = planItem(pull('abc', { createdAt: inside, author: 'dana' }), { labels: null, head: null }, [pushed('dana')], WINDOW);
    expect(plan.events).toEqual([{ kind: 'opened', sender: 'dana', labels: [] }]);
  });

  it('a new head is one synchronized event by its pusher; a head already acted on is nothing', () => {
    const plan = planItem(pull('new'), { labels: null, head: 'old' }, [pushed('erin', before), pushed('frank')], WINDOW);
    expect(plan.events).toEqual([{ kind: 'synchronized', sender: 'frank', labels: [], entryId: expect.any(Number) }]);
    expect(mayHaveNews(pull('same'), { labels: [], head: 'same' })).toBe(false);
  });

  it('a head never seen that was pushed before the window was there before baton looked', () => {
    expect(planItem(pull('x'), { labels: null, head: null }, [pushed('erin', before)], WINDOW).events).toEqual([]);
    expect(planItem(pull('x'), { labels: null, head: null }, [pushed('erin')], WINDOW).events).toEqual([
      expect.objectContaining({ kind: 'synchronized', sender: 'erin' }),
    ]);
  });
});
