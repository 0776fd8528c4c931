import { describe, expect, it } from 'vitest';
import { parsePipelineConfig } from './parse-config.js';
import { defaultStages } from './stages.js';

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
          test: { triggers: [{ event: 'opened' }, { event: 'labeled' }, 'x', { label: 'ok', allowBots: 'yes' }] },
        },
        'ignore-users': 42,
      },
      bots,
    );
    expect(problems).toEqual([
      'pipeline.colour is not a known key (known: ignore-users, ignoreUsers, labels, deploy, stages)',
      'pipeline.ignore-users must be a list of names, got "42"',
      'pipeline.labels.ready-for-lunch is not a known label role (known: bug, release, ready-for-architecture, ready-for-development, ready-for-testing, ready-for-deployment)',
      'pipeline.labels.bug must be a label name, got ""',
      'pipeline.stages.develop.account must be one of dev, review, got "x"',
      'pipeline.stages.develop.build must be one of light, heavy, got "medium"',
      'pipeline.stages.develop.onDuplicate must be one of followup, drop, got "ignore"',
      'pipeline.stages.develop.triggers must be a list of triggers, got "labeled"',
      'pipeline.stages.docs.triggers is required for a new stage (e.g. [{ event: labeled, label: docs }])',
      'pipeline.stages.Bad_Name: stage names must be lower-case letters, digits and dashes (they name .claude/commands/<stage>.md), got "Bad_Name"',
      expect.stringMatching(/^pipeline\.stages\.test\.triggers\[0\]\.event must be one of issue_opened, labeled, .*, got "opened"$/),
      'pipeline.stages.test.triggers[1].label is required when event is labeled',
      'pipeline.stages.test.triggers[2] must be a mapping like { event: labeled, label: ready-for-development }, got "x"',
      'pipeline.stages.test.triggers[3].allowBots must be true or false, got "yes"',
    ]);
  });

  it('checks deploy environment names and skipPermissions', () => {
    const { problems } = parsePipelineConfig(
      {
        deploy: { defaultEnv: 'stag ing', environments: ['prod', '--all'] },
        stages: { develop: { skipPermissions: 'no' } },
      },
      bots,
    );
    expect(problems).toEqual([
      'pipeline.deploy.environments: "--all" is not an environment name: use 1-63 letters, digits, ".", "_" or "-", starting with a letter or digit',
      'pipeline.deploy.defaultEnv: "stag ing" is not an environment name: use 1-63 letters, digits, ".", "_" or "-", starting with a letter or digit',
      'pipeline.stages.develop.skipPermissions must be true or false, got "no"',
    ]);
  });

  it('rejects a section that is not a mapping', () => {
    expect(parsePipelineConfig(['x'], bots).problems).toEqual(['pipeline must be a mapping, got "["x"]"']);
  });

  it('removes a stage with false, null or enabled: false', () => {
    const { pipeline } = parsePipelineConfig({ stages: { analyse: false, release: null, devops: { enabled: false } } }, bots);
    expect(pipeline.stages.map((s) => s.name)).not.toEqual(expect.arrayContaining(['analyse']));
    expect(pipeline.stages.map((s) => s.name)).toHaveLength(7);
  });
});
