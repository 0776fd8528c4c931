import { describe, expect, it } from 'vitest';
import { runKey, type Run } from '../runs/index.js';
import { forgeItemUrl } from './forge-links.js';
import { runView } from './run-view.js';

const ROOTS = { gitea: 'https://git.example.com', github: 'https://ghe.example.com/', gitlab: 'https://gitlab.example.com' };

describe('links to the forge', () => {
  it('spell each forge’s issue and pull request pages, on its configured root only', () => {
    const item = { owner: 'acme', repo: 'app', number: 7 };
    expect(forgeItemUrl(ROOTS, item)).toBe('https://git.example.com/acme/app/issues/7');
    expect(forgeItemUrl(ROOTS, { ...item, forge: 'forgejo', pull: true })).toBe('https://git.example.com/acme/app/pulls/7');
    expect(forgeItemUrl(ROOTS, { ...item, forge: 'github', pull: true })).toBe('https://ghe.example.com/acme/app/pull/7');
    expect(forgeItemUrl(ROOTS, { ...item, forge: 'gitlab' })).toBe('https://gitlab.example.com/acme/app/-/issues/7');
    expect(forgeItemUrl(ROOTS, { ...item, owner: 'acme/platform', forge: 'gitlab', pull: true })).toBe(
      'https://gitlab.example.com/acme/platform/app/-/merge_requests/7',
    );
    expect(forgeItemUrl({ gitea: ROOTS.gitea }, { ...item, forge: 'github' })).toBeNull();
  });

  it('in a run’s view go to the run’s own forge, a GitLab merge request’s to its own page', () => {
    const run = (request: { forge?: 'github' | 'gitlab'; mergeRequest?: boolean; declared?: boolean }) =>
      ({
        id: 1,
        key: runKey({ stage: 'review-code', owner: 'acme', repo: 'app', number: 7, ...request }),
        owner: 'acme',
        repo: 'app',
        number: 7,
        forge: request.forge,
        status: 'running',
        payload: { declared: request.declared },
        usage: null,
        lastError: null,
        summary: null,
      }) as unknown as Run;
    expect(runView(run({}), ROOTS).issueUrl).toBe('https://git.example.com/acme/app/issues/7');
    expect(runView(run({ forge: 'github' }), ROOTS).issueUrl).toBe('https://ghe.example.com/acme/app/issues/7');
    expect(runView(run({ forge: 'gitlab' }), ROOTS).issueUrl).toBe('https://gitlab.example.com/acme/app/-/issues/7');
    expect(runView(run({ forge: 'gitlab', mergeRequest: true }), ROOTS).issueUrl).toBe(
      'https://gitlab.example.com/acme/app/-/merge_requests/7',
    );
    expect(runView(run({ forge: 'github' }), { gitea: ROOTS.gitea }).issueUrl).toBeNull();
    expect(runView(run({ declared: true }), ROOTS).issueUrl).toBeNull();
  });
});
