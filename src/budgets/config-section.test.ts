import { describe, expect, it } from 'vitest';
import { checkSection } from '../config-schema/index.js';
import { budgetsSection } from './config-section.js';

const DEPS = { pipeline: { stages: [{ name: 'develop' }] } };

describe('budgets.repositories', () => {
  it('takes owner/repo and a GitLab project in a subgroup by its full path', () => {
    const raw = { repositories: { 'acme/app': { tokensPerDay: 10 }, 'acme/platform/app': { costUsdPerDay: 2 } } };
    const { value, problems } = checkSection(budgetsSection, 'budgets', raw, DEPS);
    expect(problems).toEqual([]);
    expect(value.repositories).toEqual({ 'acme/app': { tokens: 10 }, 'acme/platform/app': { costUsd: 2 } });
  });

  it.each(['acme', 'acme/', '/app', 'acme//app', 'acme/app?x'])('refuses the key %j', (key) => {
    const { problems } = checkSection(budgetsSection, 'budgets', { repositories: { [key]: { tokensPerDay: 1 } } }, DEPS);
    expect(problems.join('\n')).toContain('is not OWNER/REPO');
  });
});
