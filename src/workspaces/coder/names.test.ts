import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { coderNameProblem, isBatonWorkspaceName, isValidCoderName, workspaceNameForKey } from './names.js';

describe('coderNameProblem', () => {
  it.each([
    ['a'.repeat(33), 'must be <= 32 characters'],
    ['', 'must be >= 1 character'],
    ['new', 'cannot use "new" as a name'],
    ['create', 'cannot use "create" as a name'],
    ['-lead', 'must be alphanumeric with hyphens'],
    ['trail-', 'must be alphanumeric with hyphens'],
    ['dou--ble', 'must be alphanumeric with hyphens'],
    ['under_score', 'must be alphanumeric with hyphens'],
    ['dot.ted', 'must be alphanumeric with hyphens'],
  ])('rejects %j with Coder’s words', (name, problem) => {
    expect(coderNameProblem(name)).toBe(problem);
  });

  it('accepts 32 characters, upper case and single hyphens', () => {
    expect(isValidCoderName('A'.repeat(32))).toBe(true);
    expect(isValidCoderName('Acme-App-42')).toBe(true);
  });
});

describe('workspaceNameForKey', () => {
  it('keeps a short clean key readable, behind the prefix', () => {
    expect(workspaceNameForKey('develop-acme-app-42')).toBe('bt-develop-acme-app-42');
  });

  it('shortens long keys, keeps the issue number and adds a hash', () => {
    const name = workspaceNameForKey('review-code-acme-corp-a-really-long-repository-name-1234');
    expect(name.length).toBeLessThanOrEqual(32);
    expect(name).toMatch(/^bt-review-code-acme-(?:[a-z0-9-]*-)?1234-[a-z0-9]{7}$/);
  });

  it('tells apart keys that slug alike', () => {
    const names = ['develop-acme-my.app-1', 'develop-acme-my_app-1', 'develop-acme-my-app-1', 'develop-Acme-my-app-1'].map(
      workspaceNameForKey,
    );
    expect(new Set(names).size).toBe(4);
    for (const name of names) expect(isValidCoderName(name)).toBe(true);
  });

  it('handles keys with nothing sluggable', () => {
    const name = workspaceNameForKey('💥');
    expect(isBatonWorkspaceName(name)).toBe(true);
    expect(name).not.toBe(workspaceNameForKey('🔥'));
  });

  it('rejects an empty key, naming it', () => {
    expect(() => workspaceNameForKey('')).toThrow(/run key must be a non-empty string/);
  });

  const keyArb = fc.oneof(
    fc.string({ minLength: 1, maxLength: 120 }),
    fc
      .tuple(
        fc.constantFrom('analyse', 'develop', 'review-code', 'rework-pr', 'fix-bug', 'maintenance'),
        fc.stringMatching(/^[A-Za-z0-9._-]{1,40}$/),
        fc.stringMatching(/^[A-Za-z0-9._-]{1,100}$/),
        fc.nat({ max: 1_000_000 }),
      )
      .map(([stage, owner, repo, n]) => `${stage}-${owner}-${repo}-${n}`),
  );

  it('always yields a valid Coder name that baton recognises as its own', () => {
    fc.assert(
      fc.property(keyArb, (key) => {
        const name = workspaceNameForKey(key);
        expect(coderNameProblem(name)).toBeNull();
        expect(isBatonWorkspaceName(name)).toBe(true);
      }),
      { numRuns: 2_000 },
    );
  });

  it('is deterministic', () => {
    fc.assert(fc.property(keyArb, (key) => workspaceNameForKey(key) === workspaceNameForKey(`${key}`)));
  });

  it('gives distinct keys distinct names', () => {
    fc.assert(
      fc.property(fc.uniqueArray(keyArb, { minLength: 2, maxLength: 200 }), (keys) => {
        expect(new Set(keys.map(workspaceNameForKey)).size).toBe(keys.length);
      }),
      { numRuns: 300 },
    );
  });
});
