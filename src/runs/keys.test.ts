import { describe, expect, it } from 'vitest';
import { runIsOf, runKey, slotKey } from './keys.js';

describe('runKey', () => {
  it('names stage, repository and number', () => {
    expect(runKey({ stage: 'develop', owner: 'acme', repo: 'app', number: 7 })).toBe('develop:acme/app#7');
    expect(runKey({ stage: 'maintenance', owner: 'acme', repo: 'app' })).toBe('maintenance:acme/app');
  });

  it('keeps repositories apart whose names only differ in where the "-" falls', () => {
    const a = runKey({ stage: 'analyse', owner: 'acme', repo: 'web-api', number: 6 });
    const b = runKey({ stage: 'analyse', owner: 'acme-web', repo: 'api', number: 6 });
    expect(a).toBe('analyse:acme/web-api#6');
    expect(b).toBe('analyse:acme-web/api#6');
    expect(a).not.toBe(b);
  });

  it('keeps a stage apart from a repository-wide run of a similar name', () => {
    expect(runKey({ stage: 'review-code', owner: 'acme', repo: 'app', number: 3 })).not.toBe(
      runKey({ stage: 'review', owner: 'code-acme', repo: 'app', number: 3 }),
    );
  });

  it('uses a given key as it is, and appends a schedule slot after "@"', () => {
    expect(runKey({ stage: 'x', owner: 'a', repo: 'b', key: 'custom' })).toBe('custom');
    expect(slotKey({ stage: 'maintenance', owner: 'acme', repo: 'app' }, '2026-11-30T09:00:00.000Z')).toBe(
      'maintenance:acme/app@2026-11-30T09:00:00.000Z',
    );
  });
});

describe('runIsOf', () => {
  const run = (request: Parameters<typeof runKey>[0]) => ({ key: runKey(request), number: request.number ?? null, forge: request.forge });
  const of = { stage: 'develop', owner: 'acme', repo: 'app', number: 7 };

  it('keeps the same repository name on two forges apart, Gitea and Forgejo being one', () => {
    expect(runIsOf(run(of), { number: 7 })).toBe(true);
    expect(runIsOf({ ...run(of), forge: 'forgejo' }, { number: 7, forge: 'gitea' })).toBe(true);
    expect(runIsOf(run(of), { number: 7, forge: 'github' })).toBe(false);
    expect(runIsOf(run({ ...of, forge: 'github' }), { number: 7 })).toBe(false);
    expect(runIsOf(run({ ...of, forge: 'github' }), { number: 7, forge: 'github' })).toBe(true);
    expect(runIsOf(run(of), { number: 8 })).toBe(false);
  });

  it('tells a GitLab merge request from the issue of the same number', () => {
    const issue = run({ ...of, forge: 'gitlab' });
    const mr = run({ ...of, forge: 'gitlab', mergeRequest: true });
    expect(runIsOf(issue, { number: 7, forge: 'gitlab' })).toBe(true);
    expect(runIsOf(mr, { number: 7, forge: 'gitlab' })).toBe(false);
    expect(runIsOf(mr, { number: 7, forge: 'gitlab', mergeRequest: true })).toBe(true);
    expect(runIsOf(issue, { number: 7, forge: 'gitlab', mergeRequest: true })).toBe(false);
  });
});
