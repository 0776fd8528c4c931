import { describe, expect, it } from 'vitest';
import { branchAllowed } from './rights.js';

describe('branchAllowed', () => {
  const onIssue = { number: 12, payload: {} };
  const onPull = { number: 30, payload: { isPull: true } };

  it('issue: a branch naming the run’s issue, never another issue’s, and not for a run on a pull request', () => {
    expect(branchAllowed('feature/issue-12-add-login', ['issue'], onIssue)).toBe(true);
    expect(branchAllowed('fix/issue-12', ['issue'], onIssue)).toBe(true);
    expect(branchAllowed('feature/issue-123-other', ['issue'], onIssue)).toBe(false);
    expect(branchAllowed('main', ['issue'], onIssue)).toBe(false);
    expect(branchAllowed('feature/issue-30-x', ['issue'], onPull)).toBe(false);
    expect(branchAllowed('feature/issue-12-x', ['issue'], { number: null, payload: {} })).toBe(false);
  });

  it('head: the pull request’s head only', () => {
    expect(branchAllowed('feature/issue-7-x', ['head'], onPull, 'feature/issue-7-x')).toBe(true);
    expect(branchAllowed('feature/issue-7-y', ['head'], onPull, 'feature/issue-7-x')).toBe(false);
    expect(branchAllowed('feature/issue-7-x', ['head'], onPull)).toBe(false);
    expect(branchAllowed('feature/issue-7-x', ['head'], onIssue, 'feature/issue-7-x')).toBe(false);
  });

  it('patterns: * matches any run of characters, the rest literally', () => {
    expect(branchAllowed('release/v1.2.0', ['release/*'], onIssue)).toBe(true);
    expect(branchAllowed('release/v1/x', ['release/*'], onIssue)).toBe(true);
    expect(branchAllowed('releaseXv1', ['release.*'], onIssue)).toBe(false);
    expect(branchAllowed('chore/maintenance-2026-12-02', ['chore/maintenance-*'], onIssue)).toBe(true);
    expect(branchAllowed('anything', [], onIssue)).toBe(false);
  });
});
