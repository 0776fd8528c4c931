import { createCoderProvider, type CoderProvider, type CoderProviderOptions, type WorkspaceSpec } from '../../src/workspaces/index.js';
import type { FakeCoder } from '../fakes/coder/index.js';

/** A provider against the fake with millisecond waits, so tests stay fast. */
export function fastProvider(coder: FakeCoder, overrides: Partial<CoderProviderOptions> = {}): CoderProvider {
  return createCoderProvider({
    url: coder.url,
    token: coder.token,
    templateId: coder.template.id,
    claudeOauthToken: 'claude-oauth-secret',
    isOwnedByLiveRun: async () => false,
    pollMs: 2,
    retryBaseMs: 1,
    timeoutMs: 2_000,
    activeBuildWaitMs: 300,
    waitGoneMs: 3_000,
    ...overrides,
  });
}

export function specFor(name: string, extra: Partial<WorkspaceSpec> = {}): WorkspaceSpec {
  return {
    name,
    runId: 7,
    stage: 'develop',
    owner: 'acme',
    repo: 'app',
    number: 42,
    cloneUrl: 'https://gitea.example/acme/app.git',
    deployEnv: 'staging',
    forgeToken: 'forge-dev-bot-secret',
    forgeUrl: 'https://gitea.example',
    callbackUrl: 'https://baton.example/api/runs/7/callback',
    callbackToken: 'callback-secret-7',
    maxDurationMs: 2 * 3_600_000,
    ...extra,
  };
}

export const HOUR = 3_600_000;
