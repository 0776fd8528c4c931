import { describe, expect, it } from 'vitest';
import { parsePipelineConfig } from './config-section.js';
import { pipelineLabels, webhookEventsFor } from './onboarding.js';

const bots = { dev: { username: 'claude-dev' }, review: { username: 'claude-review' } };

describe('what a repository needs for the pipeline', () => {
  it('subscribes the default table to issues, labels, comments, pull requests and reviews, not to pushes or releases (its release stage starts from a label)', () => {
    const { pipeline } = parsePipelineConfig(undefined, bots);
    expect(webhookEventsFor(pipeline)).toEqual([
      'issue_comment',
      'issue_label',
      'issues_only',
      'pull_request_label',
      'pull_request_only',
      'pull_request_review',
      'pull_request_sync',
    ]);
  });

  it('follows the stage table: a removed stage takes its events along, a push trigger adds push', () => {
    const { pipeline } = parsePipelineConfig(
      {
        stages: Object.fromEntries(
          ['analyse', 'fix-bug', 'architect', 'develop', 'review-code', 'rework-pr', 'test', 'devops', 'release'].map((s) => [s, false]),
        ),
      },
      bots,
    );
    expect(webhookEventsFor(pipeline)).toEqual([]);
    const withPush = parsePipelineConfig({ stages: { docs: { triggers: [{ event: 'push' }] } } }, bots).pipeline;
    expect(webhookEventsFor(withPush)).toContain('push');
  });

  it('lists each trigger label once, renamed labels included, saying what it starts', () => {
    const { pipeline } = parsePipelineConfig({ labels: { 'ready-for-development': 'dev-ready' } }, bots);
    expect(pipelineLabels(pipeline)).toEqual([
      { name: 'bug', color: '#d73a4a', description: 'baton: starts fix-bug' },
      { name: 'ready-for-architecture', color: '#c5def5', description: 'baton: starts architect' },
      { name: 'dev-ready', color: '#ededed', description: 'baton: starts develop' },
      { name: 'ready-for-testing', color: '#fbca04', description: 'baton: starts test' },
      { name: 'ready-for-deployment', color: '#1d76db', description: 'baton: starts devops' },
      { name: 'release', color: '#5319e7', description: 'baton: starts release' },
    ]);
  });
});
