import { describe, expect, it } from 'vitest';
import { missingLabels, planHook } from './onboarding.js';
import type { ForgeHook } from './types.js';

const URL = 'https://baton.example/webhook/gitea';
const EVENTS = ['issue_comment', 'issue_label', 'issues_only'];
const hook = (over: Partial<ForgeHook> = {}): ForgeHook => ({
  id: 7,
  type: 'gitea',
  url: URL,
  contentType: 'json',
  events: [...EVENTS],
  active: true,
  branchFilter: '',
  ...over,
});

describe('planHook', () => {
  it('creates when no hook points at baton, keeps one that is right', () => {
    expect(planHook([hook({ url: 'https://ci.example/hook' })], URL, EVENTS)).toEqual({ action: 'create' });
    expect(planHook([hook({ url: `${URL}/` })], URL, EVENTS)).toMatchObject({ action: 'keep', hook: { id: 7 } });
  });

  it('updates one that is inactive, sends form bodies or listens to other events, saying what changes', () => {
    expect(planHook([hook({ active: false, contentType: 'form', events: ['issues_only', 'push'] })], URL, EVENTS)).toEqual({
      action: 'update',
      hook: expect.objectContaining({ id: 7 }),
      changes: ['content type form → json', 'inactive → active', 'add events issue_comment, issue_label', 'drop events push'],
    });
  });

  it('cares about a branch filter only when push is wanted', () => {
    expect(planHook([hook({ branchFilter: 'main' })], URL, EVENTS).action).toBe('keep');
    expect(planHook([hook({ branchFilter: 'main', events: ['push'] })], URL, ['push'])).toMatchObject({
      action: 'update',
      changes: ['branch filter main → all'],
    });
  });

  it('recreates every hook at baton’s URL when asked (a secret cannot be edited)', () => {
    expect(planHook([hook(), hook({ id: 8 })], URL, EVENTS, { recreate: true })).toMatchObject({
      action: 'recreate',
      hooks: [{ id: 7 }, { id: 8 }],
    });
  });
});

describe('missingLabels', () => {
  it('compares names ignoring case, as the pipeline does', () => {
    const existing = [{ id: 1, name: 'Bug', color: '#d73a4a', description: '', exclusive: false }];
    expect(missingLabels(existing, [{ name: 'bug' }, { name: 'release' }])).toEqual([{ name: 'release' }]);
  });
});
