import { describe, expect, it } from 'vitest';
import { readRunnerSettings } from '../../src/cli/agent-settings.js';
import { formatRunnerSecrets, parseRunnerSecrets, RUNNER_ENV } from '../../src/runner-contract/index.js';
import { runnerEnv, runnerSecrets, type WorkspaceSpec } from '../../src/workspaces/index.js';

// What the local provider writes for a runner is what `baton agent` reads: both sides go through
// runner-contract/, and this holds the two ends together value by value.
const full: WorkspaceSpec = {
  name: 'bt-42',
  runId: 42,
  stage: 'develop',
  owner: 'acme',
  repo: 'widgets',
  number: 7,
  cloneUrl: 'http://gitea.test/acme/widgets.git',
  arguments: '7 --fast',
  ref: 'feature/x',
  deployEnv: 'staging',
  build: 'heavy',
  setupTokens: ['forge', 'agent'],
  skipPermissions: false,
  forgeToken: 'forge-token-value',
  forgeUrl: 'http://gitea.test',
  callbackUrl: 'http://baton.test/api/runs/42/complete',
  callbackToken: 'callback-token-value',
  maxDurationMs: 120_000,
  tokenCap: 50_000,
};

describe('the runner contract', () => {
  it('reads back every run value the local provider writes, without a problem', () => {
    const env = runnerEnv(full);
    for (const name of Object.keys(env)) expect(Object.values(RUNNER_ENV)).toContain(name);
    const { settings, problems } = readRunnerSettings({}, { ...env });
    expect(problems).toEqual([]);
    expect(settings).toMatchObject({
      stage: 'develop',
      issueNumber: '7',
      cloneUrl: full.cloneUrl,
      repoName: 'widgets',
      branch: 'feature/x',
      arguments: '7 --fast',
      deployEnv: 'staging',
      heavy: true,
      setupTokens: ['forge', 'agent'],
      skipPermissions: false,
      maxDurationMs: 120_000,
      tokenCap: 50_000,
    });
    expect(env[RUNNER_ENV.callbackUrl]).toBe(full.callbackUrl);
    expect(env[RUNNER_ENV.runId]).toBe('42');
    expect(env[RUNNER_ENV.forgeUrl]).toBe('http://gitea.test');
    expect(env[RUNNER_ENV.owner]).toBe('acme');
  });

  it('leaves out what a run does not set, and the runner then uses its own defaults', () => {
    const env = runnerEnv({
      name: 'bt-1',
      runId: 1,
      stage: 'maintenance',
      owner: 'acme',
      repo: 'widgets',
      callbackUrl: 'http://b/x',
      callbackToken: 't',
    });
    const { settings, problems } = readRunnerSettings({}, { ...env });
    expect(problems).toEqual([]);
    expect(settings).toMatchObject({
      stage: 'maintenance',
      issueNumber: undefined,
      branch: undefined,
      heavy: undefined,
      setupTokens: [],
      skipPermissions: undefined,
    });
    expect(settings.maxDurationMs).toBe(90 * 60_000);
    expect(settings.tokenCap).toBe(0);
  });

  it('hands over the secrets in the format the runner parses', () => {
    const text = formatRunnerSecrets(runnerSecrets(full));
    expect(parseRunnerSecrets(text, 'test')).toEqual({ CALLBACK_TOKEN: 'callback-token-value', GITEA_TOKEN: 'forge-token-value' });
  });
});
