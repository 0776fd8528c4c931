import { describe, expect, it } from 'vitest';
import { parsePipelineConfig } from './config-section.js';
import { defaultStages, mayMergeOf, pushRulesOf } from './stages.js';

const bots = { dev: { username: 'claude-dev' }, review: { username: 'claude-review' } };

describe('parsePipelineConfig', () => {
  it('gives the default table when the section is absent', () => {
    const { pipeline, problems } = parsePipelineConfig(undefined, bots);
    expect(problems).toEqual([]);
    expect(pipeline.stages).toEqual(defaultStages());
    expect(pipeline.stages.map((s) => s.name)).toEqual([
      'analyse',
      'fix-bug',
      'architect',
      'develop',
      'review-code',
      'rework-pr',
      'test',
      'devops',
      'release',
      'maintenance',
    ]);
    expect(pipeline.botUsers).toEqual(['claude-dev', 'claude-review']);
  });

  it('names every bad key with the expected form', () => {
    const { problems } = parsePipelineConfig(
      {
        colour: 'blue',
        labels: { 'ready-for-lunch': 'x', bug: '' },
        stages: {
          develop: { account: 'x', build: 'medium', onDuplicate: 'ignore', triggers: 'labeled' },
          docs: { account: 'dev' },
          Bad_Name: { triggers: [] },
          test: { triggers: [{ event: 'opened' }, { event: 'labeled' }, 'x', { label: 'ok', allowBots: 'maybe' }] },
        },
        'ignore-users': 42,
      },
      bots,
    );
    expect(problems).toEqual([
      'baton.yaml: unknown key "pipeline.colour" (known keys: mention, ignore-users, ignoreUsers, labels, deploy, stages)',
      'pipeline.ignore-users must be a list, got "42"',
      'baton.yaml: unknown key "pipeline.labels.ready-for-lunch" (known keys: bug, release, ready-for-architecture, ready-for-development, ready-for-testing, ready-for-deployment)',
      'pipeline.labels.bug must be a non-empty string, got ""',
      'pipeline.stages.develop.build must be one of light, heavy, got "medium"',
      'pipeline.stages.develop.onDuplicate must be one of followup, drop, got "ignore"',
      'pipeline.stages.develop.triggers must be a list, got "labeled"',
      'pipeline.stages: the key "Bad_Name" is not a stage name: lower-case letters, digits and dashes (it names .claude/commands/<stage>.md)',
      expect.stringMatching(/^pipeline\.stages\.test\.triggers\[0\]\.event must be one of issue_opened, labeled, .*, got "opened"$/),
      'pipeline.stages.test.triggers[1].label is required when event is labeled',
      'pipeline.stages.test.triggers[2] must be a mapping of settings, got "x"',
      'pipeline.stages.test.triggers[3].allowBots must be true or false, got "maybe"',
      'pipeline.stages.develop.account must be one of dev, review, got "x"',
      'pipeline.stages.docs.triggers is required for a new stage (e.g. [{ event: labeled, label: docs }])',
    ]);
  });

  it('checks deploy environment names and skipPermissions', () => {
    const { problems } = parsePipelineConfig(
      {
        deploy: { defaultEnv: 'stag ing', environments: ['prod', '--all'] },
        stages: { develop: { skipPermissions: 'maybe' } },
      },
      bots,
    );
    expect(problems).toEqual([
      'pipeline.deploy.defaultEnv must be an environment name: 1-63 letters, digits, ".", "_" or "-", starting with a letter or digit, got "stag ing"',
      'pipeline.deploy.environments[1] must be an environment name: 1-63 letters, digits, ".", "_" or "-", starting with a letter or digit, got "--all"',
      'pipeline.stages.develop.skipPermissions must be true or false, got "maybe"',
    ]);
  });

  it('sets what a stage may push and merge through the forge gateway, with defaults per stage', () => {
    const { pipeline, problems } = parsePipelineConfig(
      { stages: { develop: { push: ['issue', 'docs/*'] }, test: { merge: true }, analyse: { push: [] } } },
      bots,
    );
    expect(problems).toEqual([]);
    const stage = (name: string) => pipeline.stages.find((s) => s.name === name)!;
    expect(pushRulesOf(stage('develop'))).toEqual(['issue', 'docs/*']);
    expect(pushRulesOf(stage('analyse'))).toEqual([]);
    expect(pushRulesOf(stage('rework-pr'))).toEqual(['issue', 'head']);
    expect(pushRulesOf(stage('release'))).toEqual(['issue', 'head', 'release/*']);
    expect(pushRulesOf(stage('maintenance'))).toEqual(['chore/maintenance-*']);
    expect(pushRulesOf(stage('review-code'))).toEqual([]);
    expect([mayMergeOf(stage('test')), mayMergeOf(stage('devops')), mayMergeOf(stage('develop'))]).toEqual([true, true, false]);
    expect(parsePipelineConfig({ stages: { develop: { push: ['main branch'] } } }, bots).problems).toEqual([
      'pipeline.stages.develop.push[0] must be issue, head or a branch pattern like release/* (letters, digits, ".", "_", "-", "/", "*"), got "main branch"',
    ]);
  });

  it('rejects a section that is not a mapping', () => {
    expect(parsePipelineConfig(['x'], bots).problems).toEqual(['pipeline must be a mapping of settings, got "["x"]"']);
  });

  it('removes a stage with false, null or enabled: false', () => {
    const { pipeline } = parsePipelineConfig({ stages: { analyse: false, release: null, devops: { enabled: false } } }, bots);
    expect(pipeline.stages.map((s) => s.name)).not.toEqual(expect.arrayContaining(['analyse']));
    expect(pipeline.stages.map((s) => s.name)).toHaveLength(7);
  });

  it('grants setup tokens per stage (none by default) and names unknown ones', () => {
    const { pipeline, problems } = parsePipelineConfig(
      {
        stages: {
          test: { setupTokens: ['forge', 'agent', 'forge'] },
          develop: { setupTokens: 'forge' },
          'review-code': { setupTokens: ['coder'] },
        },
      },
      bots,
    );
    expect(problems).toEqual(['pipeline.stages.review-code.setupTokens[0] must be one of forge, agent, got "coder"']);
    const stage = (name: string) => pipeline.stages.find((s) => s.name === name);
    expect(stage('test')?.setupTokens).toEqual(['forge', 'agent']);
    expect(stage('develop')?.setupTokens).toEqual(['forge']);
    expect(stage('review-code')?.setupTokens).toBeUndefined();
    expect(stage('fix-bug')?.setupTokens).toBeUndefined();
  });
});
