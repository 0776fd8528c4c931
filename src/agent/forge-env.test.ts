import { describe, expect, it } from 'vitest';
import { forgeEnv } from './forge-env.js';

describe('forgeEnv', () => {
  const base = { GITEA_URL: 'http://baton.internal/gateway', GITEA_ORG: 'acme', GITEA_REPO: 'app' };

  it("gives a GitHub run's agent the capability in gh's and Octokit's names, and the gateway as the API root", () => {
    expect(forgeEnv({ ...base, BATON_FORGE: 'github' }, 'bgw_1_cap')).toEqual({
      GITEA_TOKEN: 'bgw_1_cap',
      GH_TOKEN: 'bgw_1_cap',
      GITHUB_TOKEN: 'bgw_1_cap',
      GITHUB_API_URL: 'http://baton.internal/gateway/api/v3',
      GITHUB_REPOSITORY: 'acme/app',
    });
  });

  it("gives a GitLab run's agent the capability in glab's and GitLab CI's names", () => {
    expect(forgeEnv({ ...base, BATON_FORGE: 'gitlab' }, 'bgw_1_cap')).toEqual({
      GITEA_TOKEN: 'bgw_1_cap',
      GITLAB_TOKEN: 'bgw_1_cap',
      GITLAB_HOST: 'http://baton.internal/gateway',
      CI_API_V4_URL: 'http://baton.internal/gateway/api/v4',
      CI_SERVER_URL: 'http://baton.internal/gateway',
      CI_PROJECT_PATH: 'acme/app',
    });
  });

  it('keeps a Gitea run (or one that names no forge) to GITEA_TOKEN, and gives nothing without a token', () => {
    expect(forgeEnv({ ...base, BATON_FORGE: 'gitea' }, 'bgw_1_cap')).toEqual({ GITEA_TOKEN: 'bgw_1_cap' });
    expect(forgeEnv(base, 'bgw_1_cap')).toEqual({ GITEA_TOKEN: 'bgw_1_cap' });
    expect(forgeEnv({ ...base, BATON_FORGE: 'github' }, undefined)).toEqual({});
  });
});
