import { describe, expect, it } from 'vitest';
import { manualRequest } from './manual.js';
import { parsePipelineConfig } from './config-section.js';

const bots = { dev: { username: 'claude-dev' }, review: { username: 'claude-review' } };

describe('manualRequest', () => {
  const { pipeline } = parsePipelineConfig({ stages: { test: { setupTokens: ['forge'] }, analyse: { onDuplicate: 'drop' } } }, bots);

  it('shapes the run like the stage table says: account, build, setup tokens, duplicate policy', () => {
    expect(manualRequest(pipeline, { stage: 'test', owner: 'acme', repo: 'app', number: 4 })).toEqual({
      stage: 'test',
      owner: 'acme',
      repo: 'app',
      number: 4,
      onDuplicate: 'followup',
      payload: {
        account: 'review',
        accountUser: 'claude-review',
        build: 'heavy',
        setupTokens: ['forge'],
        trigger: 'submitted through the API',
      },
    });
    expect(manualRequest(pipeline, { stage: 'analyse', owner: 'acme', repo: 'app' })).toMatchObject({ onDuplicate: 'drop' });
  });

  it('carries the arguments, the branch and whether the repository is declared; a deploying stage gets the default environment', () => {
    expect(
      manualRequest(pipeline, { stage: 'devops', owner: 'demo', repo: 'hello', arguments: 'staging only', ref: 'main', declared: true }),
    ).toMatchObject({ payload: { deployEnv: 'staging', arguments: 'staging only', ref: 'main', declared: true } });
  });

  it('names the stages there are when the stage is unknown', () => {
    expect(manualRequest(pipeline, { stage: 'nope', owner: 'a', repo: 'b' })).toEqual({
      unknownStage: ['analyse', 'fix-bug', 'architect', 'develop', 'review-code', 'rework-pr', 'test', 'devops', 'release', 'maintenance'],
    });
  });
});
